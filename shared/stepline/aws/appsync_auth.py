"""Where an AppSync Event API is, and the SigV4 signature its requests carry (botocore's signer, IAM).

The writer signs its HTTP publish with these headers; the stream signs its WebSocket's
connection and each subscription with the same headers (`stepline.aws.appsync_realtime`).
The role's credentials are resolved once per process and frozen per signature.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast

__all__ = ["Credentials", "EventApi", "EventApiSigner", "SIGNED_HEADERS", "forget_credentials"]

SIGNED_HEADERS = {
    "accept": "application/json, text/javascript",
    "content-encoding": "amz-1.0",
    "content-type": "application/json; charset=UTF-8",
}
"""The headers an Event API request carries and signs (the AWS AppSync Events signer examples)."""


@dataclass(frozen=True, slots=True)
class EventApi:
    """Where the Event API is: its two domains (`Dns.Http`, `Dns.Realtime`) and region.

    `secure` is False only for a local fake (http:// and ws://).
    """

    http_domain: str
    realtime_domain: str
    region: str
    secure: bool = True

    @property
    def publish_url(self) -> str:
        return f"{'https' if self.secure else 'http'}://{self.http_domain}/event"

    @property
    def realtime_url(self) -> str:
        return f"{'wss' if self.secure else 'ws'}://{self.realtime_domain}/event/realtime"


class Credentials(Protocol):
    """Frozen AWS credentials (botocore's `ReadOnlyCredentials`), what a signature is made with."""

    @property
    def access_key(self) -> str: ...
    @property
    def secret_key(self) -> str: ...
    @property
    def token(self) -> str | None: ...


@functools.cache
def _session() -> Any:
    import boto3

    return boto3.Session()


def forget_credentials() -> None:
    """Resolve the credentials afresh at the next signature (after a SnapStart restore)."""
    _session.cache_clear()


def _role_credentials() -> Credentials:
    """The function's current credentials, frozen per signature (refreshable ones rotate)."""
    found = _session().get_credentials()
    if found is None:
        raise RuntimeError("no AWS credentials to sign the Event API request")
    return cast(Credentials, found.get_frozen_credentials())


class EventApiSigner:
    """SigV4 headers for an Event API request, as the HTTP publish and the WebSocket messages need."""

    def __init__(self, api: EventApi, credentials: Callable[[], Credentials] = _role_credentials) -> None:
        self._api = api
        self._credentials = credentials

    def headers(self, body: str) -> dict[str, str]:
        """The signed headers of `POST {http}/event` with `body`, and `host`.

        A WebSocket authorization object must name the host; the names are in lower case, as AWS's
        own signers give them.
        """
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        request = AWSRequest(method="POST", url=self._api.publish_url, data=body.encode(), headers=SIGNED_HEADERS)
        signer: Any = SigV4Auth(self._credentials(), "appsync", self._api.region)  # pyright: ignore[reportArgumentType]
        signer.add_auth(request)
        signed = {str(k).lower(): str(v) for k, v in cast(Mapping[str, str], request.headers).items()}
        return {"host": self._api.http_domain, **signed}
