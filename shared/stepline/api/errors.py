"""The API's errors: an HTTP status and a message that says what was wrong.

Bodies are `{"error": {"status": ..., "message": ...}}`. The AI SDK client shows a non-2xx
response's body text as the error, so the message is written for the person reading it. A store
`NotFound` is a 404 whether the item does not exist or belongs to another user: the two are
indistinguishable by design.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import JSONResponse

__all__ = ["ApiError", "error_body", "error_response"]


class ApiError(Exception):
    """A request the API refuses, with the status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def error_body(status: int, message: str) -> dict[str, object]:
    """The JSON body of an error response."""
    return {"error": {"status": status, "message": message}}


async def error_response(_: Request, error: Exception) -> JSONResponse:
    """The exception handler of `ApiError`."""
    assert isinstance(error, ApiError)
    return JSONResponse(error_body(error.status, error.message), status_code=error.status)
