"""SigV4 for OTLP/HTTP: X-Ray's OTLP traces endpoint takes spans signed with the caller's AWS credentials.

The OpenTelemetry exporter posts with a `requests.Session`; this session's auth signs each
request (the body as the exporter sends it, gzip included) with botocore's `SigV4Auth` and the
credentials botocore finds (the Lambda role's, from the environment). No collector, no extension
process, no AWS distro: the exporter itself talks to X-Ray (docs/architecture.md, "Tracing").
"""

from __future__ import annotations

from typing import Any

import requests
import requests.auth
from botocore import session as botocore_session
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

__all__ = ["SigV4RequestsAuth", "signed_session", "xray_traces_endpoint"]


def xray_traces_endpoint(region: str) -> str:
    """X-Ray's OTLP traces endpoint in `region` (it needs CloudWatch Transaction Search turned on)."""
    return f"https://xray.{region}.amazonaws.com/v1/traces"


class SigV4RequestsAuth(requests.auth.AuthBase):
    """Signs a prepared request for `service` in `region` (credentials are read at each call: they rotate)."""

    def __init__(self, service: str, region: str, credentials: Any = None) -> None:
        self.service = service
        self.region = region
        self._credentials = credentials

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        credentials: Any = self._credentials or _credentials()
        if credentials is None:
            raise RuntimeError("no AWS credentials to sign the OTLP export with")
        raw: Any = request.body
        body: bytes = raw if isinstance(raw, bytes) else str(raw or "").encode()
        signed = AWSRequest(method=request.method or "POST", url=request.url or "", data=body)
        headers: Any = signed.headers
        headers["Content-Type"] = str(request.headers.get("Content-Type", "application/x-protobuf"))
        if "Content-Encoding" in request.headers:
            headers["Content-Encoding"] = str(request.headers["Content-Encoding"])
        auth: Any = SigV4Auth(credentials.get_frozen_credentials(), self.service, self.region)
        auth.add_auth(signed)
        for header in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token"):
            value = headers.get(header)
            if value is not None:
                request.headers[header] = str(value)
        return request


def _credentials() -> Any:
    """The credentials botocore resolves now (the Lambda role's, from the environment)."""
    session: Any = botocore_session.get_session()  # pyright: ignore[reportUnknownMemberType]
    return session.get_credentials()


def signed_session(service: str, region: str, credentials: Any = None) -> requests.Session:
    """A session whose requests are SigV4-signed for `service`."""
    session = requests.Session()
    session.auth = SigV4RequestsAuth(service, region, credentials)
    return session
