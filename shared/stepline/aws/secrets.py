"""The approval-link key from AWS Secrets Manager, read once at cold start.

template.yaml has Secrets Manager generate the key (`AWS::SecretsManager::Secret` with
`GenerateSecretString`), so it is never written in the template, a parameter or an environment
variable: the functions get the secret's ARN and read its value with `GetSecretValue`.
"""

from __future__ import annotations

from typing import Any

from ..errors import StepLineError
from ..runtime.approval_links import MIN_KEY_BYTES, ApprovalLinks

__all__ = ["KeyUnavailableError", "approval_links_from_secret"]


class KeyUnavailableError(StepLineError):
    """The approval-link key cannot be read or is too short (the function does not start half-configured)."""


def approval_links_from_secret(client: Any, secret_id: str) -> ApprovalLinks:
    """`ApprovalLinks` keyed by the secret's string; a secret that cannot be read fails naming the secret."""
    try:
        value = client.get_secret_value(SecretId=secret_id)["SecretString"]
    except Exception as error:  # the value itself is never in the message
        code = getattr(error, "response", {}).get("Error", {}).get("Code", type(error).__name__)
        message = f"cannot read the approval-link key {secret_id} from Secrets Manager ({code})"
        raise KeyUnavailableError(message) from None
    key = str(value).encode()
    if len(key) < MIN_KEY_BYTES:
        raise KeyUnavailableError(f"the approval-link key {secret_id} is shorter than {MIN_KEY_BYTES} bytes")
    return ApprovalLinks(key)
