"""The API's errors: an HTTP status and a message that says what was wrong.

Bodies are `{"error": {"status": ..., "message": ...}}`. The AI SDK client shows a non-2xx
response's body text as the error, so the message is written for the person reading it. A store
`NotFound` is a 404 "not found" whether the item does not exist or belongs to another user: the
two are indistinguishable by design.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from ..errors import InvalidUIMessageError
from ..runtime.budget_wait import BudgetDecisionForbidden
from ..runtime.working_runs import TooManyRuns
from ..store.errors import Conflict, Gone, NotFound

__all__ = ["ApiError", "error_body", "error_response", "install_error_handlers"]


class ApiError(Exception):
    """A request the API refuses, with the status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def error_body(status: int, message: str) -> dict[str, object]:
    """The JSON body of an error response."""
    return {"error": {"status": status, "message": message}}


def error_response(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """An error answer (also for the middleware that refuses a request before the app sees it)."""
    return JSONResponse(error_body(status, message), status_code=status, headers=headers)


_answer = error_response


def _by_status(status: int) -> Callable[[Request, Exception], Awaitable[JSONResponse]]:
    async def refuse(_: Request, error: Exception) -> JSONResponse:
        return _answer(status, "not found" if status == 404 else str(error))

    return refuse


async def _api_error(_: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, ApiError)
    return _answer(error.status, error.message)


async def _too_many_runs(_: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, TooManyRuns)
    return _answer(429, str(error), {"Retry-After": str(error.retry_after)})


async def _invalid(_: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, RequestValidationError)
    problems: list[str] = []
    for issue in error.errors():
        location = ".".join(str(p) for p in issue["loc"] if p != "body")
        problems.append(f"{location}: {issue['msg']}" if location else str(issue["msg"]))
    return _answer(400, "; ".join(problems))


async def _http_error(_: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, HTTPException)
    return _answer(error.status_code, str(error.detail), error.headers)


def install_error_handlers(app: FastAPI) -> None:
    """Every refusal as `error_body`: store errors by kind, validation as 400 naming the field."""
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(NotFound, _by_status(404))
    app.add_exception_handler(Gone, _by_status(410))
    app.add_exception_handler(Conflict, _by_status(409))  # DecisionConflict, ActiveRunExists, TerminalState
    app.add_exception_handler(InvalidUIMessageError, _by_status(400))
    app.add_exception_handler(BudgetDecisionForbidden, _by_status(403))
    app.add_exception_handler(TooManyRuns, _too_many_runs)  # the cap on working runs: nothing started
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(HTTPException, _http_error)  # 401 from identity, 400/413 from `bodies`
