"""Inbound webhooks: where a hook's secret comes from, and the check of a delivery's signature.

Deliveries are signed with the Standard Webhooks scheme (`webhook-id`, `webhook-timestamp`,
`webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`), checked by the
`standardwebhooks` package: a signature that does not match the body, a timestamp more than five
minutes off, or a missing header is refused. A replay (the same `webhook-id` again) is refused by
the run it started (`stepline.api.hooks`).

A secret is a base64 string, optionally prefixed `whsec_` (the form Standard Webhooks libraries
and senders such as Svix use); its decoded bytes are the HMAC key.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Mapping
from typing import Protocol

from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from ..errors import StepLineError

__all__ = ["BadSignature", "EnvHookSecrets", "HookSecrets", "check_secret", "env_name", "verify"]

MIN_KEY_BYTES = 16


class BadSignature(StepLineError):
    """A delivery whose signature, timestamp or headers do not verify (401)."""


class HookSecrets(Protocol):
    """The secret of one hook (None when none is configured)."""

    def secret(self, agent: str, hook: str) -> str | None: ...


def check_secret(secret: str, what: str) -> str:
    """`secret` when it is base64 of at least 16 bytes (with or without `whsec_`); else `ValueError`."""
    text = secret.removeprefix("whsec_")
    try:
        key = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{what} is not base64 (generate one: openssl rand -base64 32)") from None
    if len(key) < MIN_KEY_BYTES:
        raise ValueError(f"{what} is shorter than {MIN_KEY_BYTES} bytes")
    return secret


def env_name(agent: str, hook: str) -> str:
    """`STEPLINE_HOOK_SECRET_<AGENT>_<HOOK>`: upper case, every other character as `_`."""
    return "STEPLINE_HOOK_SECRET_" + re.sub(r"[^A-Z0-9]", "_", f"{agent}_{hook}".upper())


class EnvHookSecrets:
    """Secrets from the environment (`stepline dev`)."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = os.environ if env is None else env

    def secret(self, agent: str, hook: str) -> str | None:
        value = self._env.get(env_name(agent, hook), "").strip()
        return check_secret(value, env_name(agent, hook)) if value else None


def verify(secret: str, body: bytes, headers: Mapping[str, str]) -> str:
    """The delivery's `webhook-id` once its signature and timestamp verify; else `BadSignature`."""
    wanted = {k: headers[k] for k in ("webhook-id", "webhook-timestamp", "webhook-signature") if k in headers}
    try:
        text = body.decode()
        Webhook(secret).verify(text, wanted, json_parse=False)
    except UnicodeDecodeError:
        raise BadSignature("the body is not UTF-8") from None
    except WebhookVerificationError as error:
        raise BadSignature(f"signature: {error}") from None
    except (ValueError, binascii.Error):  # a malformed signature header ("v1" without a comma, bad base64)
        raise BadSignature("signature: malformed webhook-signature header") from None
    return wanted["webhook-id"]
