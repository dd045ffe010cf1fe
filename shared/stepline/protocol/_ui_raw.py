"""The pass over a chat request's raw JSON before the `UIMessage` models see it (`_ui_validation.py`).

What a pydantic model cannot say on its own: the keys the SDK schema does not know for a tool
part's state and Stepline's extension fields are stripped, `input`/`output`/`data` must be present
where the SDK's `z.unknown()` makes them required, per-state tool and approval rules get precise
paths, and a NaN or infinity (which JSON cannot carry) is found without recursion.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final, Literal, cast

Issue = tuple[str, str]
"""`(path, reason)`, for example `("messages[0].parts[1].toolCallId", "required field is missing")`."""

ApprovalRule = Literal["never", "requested", "responded", "granted", "denied"]


@dataclass(frozen=True)
class StateRule:
    extra: frozenset[str]
    required: tuple[str, ...]
    forbidden: tuple[str, ...]
    approval: ApprovalRule


NONE: Final = frozenset[str]()
TOOL_RULES: Final[Mapping[str, StateRule]] = {
    "input-streaming": StateRule(
        frozenset({"rawInput", "inputEncoding"}), (), ("output", "errorText", "approval"), "never"
    ),
    "input-available": StateRule(NONE, ("input",), ("output", "errorText", "approval"), "never"),
    "approval-requested": StateRule(NONE, ("input", "approval"), ("output", "errorText"), "requested"),
    "approval-responded": StateRule(NONE, ("input", "approval"), ("output", "errorText"), "responded"),
    "output-available": StateRule(
        frozenset({"resultProviderMetadata", "preliminary"}), ("input", "output"), ("errorText",), "granted"
    ),
    "output-error": StateRule(
        frozenset({"rawInput", "resultProviderMetadata"}), ("errorText",), ("output",), "granted"
    ),
    "output-denied": StateRule(NONE, ("input", "approval"), ("output", "errorText"), "denied"),
}
TOOL_KEYS: Final = frozenset(
    {"type", "toolCallId", "title", "toolMetadata", "state", "providerExecuted", "callProviderMetadata"}
    | {"input", "output", "errorText", "approval"}
)
DYNAMIC_KEYS: Final = frozenset({"toolName", "dynamic"})
APPROVAL_EXTENSIONS: Final = ("status", "requestedAt", "decidedAt")
STEERING_KEYS: Final[Mapping[str, frozenset[str]]] = {
    "text": frozenset({"type", "text", "providerMetadata"}),
    "file": frozenset({"type", "mediaType", "filename", "url", "providerReference", "providerMetadata"}),
}
UNION_LABELS: Final[Mapping[str, str]] = {"TextPart": "text", "FilePart": "file"}
"""Member labels pydantic puts in the error location of the steering-message part union."""
IDENTIFIER: Final = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


@dataclass(frozen=True)
class Options:
    allow_system: bool
    keep_extensions: bool
    for_conversion: bool = False


def as_dict(value: object) -> dict[str, object] | None:
    return cast(dict[str, object], value) if isinstance(value, dict) else None


def as_list(value: object) -> list[object] | None:
    return cast(list[object], value) if isinstance(value, list) else None


def json_key(name: object) -> str:
    text = str(name)
    return f".{text}" if IDENTIFIER.fullmatch(text) else f"[{text!r}]"


def non_finite_path(value: object, path: str) -> str | None:
    """The path of the first NaN or infinity (JSON cannot carry them), searched without recursion."""
    stack: list[tuple[object, str]] = [(value, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return where
        if (items := as_list(node)) is not None:
            stack.extend((item, f"{where}[{i}]") for i, item in reversed(list(enumerate(items))))
        elif (mapping := as_dict(node)) is not None:
            stack.extend((item, f"{where}{json_key(k)}") for k, item in reversed(mapping.items()))
    return None


def prepare_message(raw: object, path: str, options: Options) -> tuple[object, list[Issue]]:
    message = as_dict(raw)
    if message is None:
        return raw, []
    issues: list[Issue] = []
    role = message.get("role")
    if role == "system" and not options.allow_system:
        issues.append((f"{path}.role", 'a client may not send a "system" message'))
    parts = as_list(message.get("parts"))
    if parts is None:
        if "parts" not in message:  # the model would default it to []; the SDK requires the key
            issues.append((f"{path}.parts", "required field is missing"))
        return message, issues
    if not parts and role in ("user", "system"):
        issues.append((f"{path}.parts", "must contain at least one part (only an assistant message may be empty)"))
    prepared: list[object] = []
    for index, item in enumerate(parts):
        part, part_issues = prepare_part(item, f"{path}.parts[{index}]", options)
        prepared.append(part)
        issues.extend(part_issues)
    return {**message, "parts": prepared}, issues


def prepare_part(raw: object, path: str, options: Options) -> tuple[object, list[Issue]]:
    part = as_dict(raw)
    part_type = part.get("type") if part is not None else None
    if part is None or not isinstance(part_type, str):
        return raw, []
    if part_type.startswith("tool-") or part_type == "dynamic-tool":
        return prepare_tool(part, path, options)
    if part_type.startswith("data-"):
        return part, [] if "data" in part else [(f"{path}.data", "required field is missing")]
    if part_type == "steering-message":
        return prepare_steering(part, path, options)
    return part, []


def prepare_steering(part: dict[str, object], path: str, options: Options) -> tuple[object, list[Issue]]:
    inner = as_list(part.get("parts"))
    if inner is None:
        return part, []
    issues: list[Issue] = []
    prepared: list[object] = []
    for index, item in enumerate(inner):
        entry = as_dict(item)
        keys = STEERING_KEYS.get(str(entry.get("type"))) if entry is not None else None
        if entry is None or keys is None:
            issues.append((f"{path}.parts[{index}]", "a steering message part must be a text or file part"))
            prepared.append(item)
        else:
            prepared.append(entry if options.keep_extensions else {k: v for k, v in entry.items() if k in keys})
    return {**part, "parts": prepared}, issues


def prepare_tool(part: dict[str, object], path: str, options: Options) -> tuple[object, list[Issue]]:
    state = part.get("state")
    rule = TOOL_RULES.get(state) if isinstance(state, str) else None
    if rule is None:
        return part, []  # the model reports the missing or unknown state
    if not options.keep_extensions:
        allowed = TOOL_KEYS | rule.extra | (DYNAMIC_KEYS if part.get("type") == "dynamic-tool" else NONE)
        part = {key: value for key, value in part.items() if key in allowed}
        if (approval := as_dict(part.get("approval"))) is not None:
            part["approval"] = {k: v for k, v in approval.items() if k not in APPROVAL_EXTENSIONS}
    issues = [
        (f"{path}.{name}", f'must not be present when the state is "{state}"')
        for name in rule.forbidden
        if name in part
    ]
    for name in rule.required:
        if name == "approval" and state == "output-denied" and options.for_conversion:
            continue
        if name not in part or (name in ("approval", "errorText") and part[name] is None):
            issues.append((f"{path}.{name}", f'required field is missing (state "{state}")'))
    if state == "input-streaming" and "rawInput" in part and not isinstance(part["rawInput"], str):
        issues.append((f"{path}.rawInput", "must be a string"))
    approval = as_dict(part.get("approval"))
    if approval is not None:
        issues.extend(approval_issues(approval, rule.approval, f"{path}.approval", str(state)))
    return part, issues


def approval_issues(approval: dict[str, object], rule: ApprovalRule, path: str, state: str) -> Iterator[Issue]:
    approved = approval.get("approved")
    match rule:
        case "requested":
            for name in ("approved", "reason"):
                if name in approval:
                    yield f"{path}.{name}", "must not be present while the approval is still requested"
        case "responded" if not isinstance(approved, bool):
            yield f"{path}.approved", 'must be true or false when the state is "approval-responded"'
        case "granted" if approved is not True:
            yield f"{path}.approved", f'must be true: a tool part in state "{state}" ran after an approval'
        case "denied" if approved is not False:
            yield f"{path}.approved", 'must be false when the state is "output-denied"'
        case _:
            pass
