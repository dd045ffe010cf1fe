"""Each function's MemorySize in template.yaml, in MB (a parameter's default where it is a parameter)."""

from __future__ import annotations

from typing import Any

from stepline.local.resources import load_template, resources

__all__ = ["memory_mb"]

_LAMBDA_DEFAULT_MB = 128
"""What Lambda gives a function without a MemorySize (the template sets one on each)."""


def memory_mb() -> dict[str, int]:
    """MemorySize by function logical id (the template's Globals otherwise)."""
    template = load_template()
    parameters = template["Parameters"]
    default = template.get("Globals", {}).get("Function", {}).get("MemorySize", _LAMBDA_DEFAULT_MB)

    def size(value: Any) -> int:
        return int(parameters[value["Ref"]]["Default"] if isinstance(value, dict) else value)

    functions = resources("AWS::Serverless::Function")
    return {name: size(props.get("MemorySize", default)) for name, props in functions.items()}
