"""`validate_ui_messages`: untrusted JSON messages into `UIMessage` models, as the AI SDK validates them.

Mirrors `validateUIMessages` of `packages/ai/src/ui/validate-ui-messages.ts` (`ai@7.0.173`): the same
inputs are rejected, unknown keys are stripped, and a message list stops at its first invalid
message. The part models (`parts.py`) carry the type and per-state rules; this module adds what a
pydantic model cannot say on its own, in a pass over the raw JSON before the models see it:

- keys the SDK schema does not know for a tool part's state (`rawInput` outside `input-streaming`/
  `output-error`, `preliminary` outside `output-available`, …) and Stepline's extension fields are
  stripped, so a client can never set the server's approval facts;
- `input`/`output`/`data` must be present where the SDK's `z.unknown()` makes them required (an
  explicit `null` is fine), while every other optional field must be left out rather than `null`;
- per-state tool rules get precise paths (`…parts[0].approval.approved`).

Every problem is a `(path, reason)` pair; no reason quotes the value it rejects.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, cast

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel
from pydantic_core import ErrorDetails

from ..errors import InvalidUIMessageError
from .parts import DataPart, UIMessage

__all__ = ["Issue", "Schema", "validate_ui_messages"]

Issue = tuple[str, str]
"""`(path, reason)`, for example `("messages[0].parts[1].toolCallId", "required field is missing")`."""

Schema = type[BaseModel] | TypeAdapter[Any]
"""A metadata or data-part schema: a pydantic model class or a `TypeAdapter`."""

MAX_ISSUES: Final = 20
"""Untrusted input must not make the error grow without bound (the SDK stops at the first bad element)."""

_MESSAGE: Final = TypeAdapter(UIMessage)

ApprovalRule = Literal["never", "requested", "responded", "granted", "denied"]


@dataclass(frozen=True)
class _StateRule:
    extra: frozenset[str]
    required: tuple[str, ...]
    forbidden: tuple[str, ...]
    approval: ApprovalRule


_NONE: Final = frozenset[str]()
_TOOL_RULES: Final[Mapping[str, _StateRule]] = {
    "input-streaming": _StateRule(
        frozenset({"rawInput", "inputEncoding"}), (), ("output", "errorText", "approval"), "never"
    ),
    "input-available": _StateRule(_NONE, ("input",), ("output", "errorText", "approval"), "never"),
    "approval-requested": _StateRule(_NONE, ("input", "approval"), ("output", "errorText"), "requested"),
    "approval-responded": _StateRule(_NONE, ("input", "approval"), ("output", "errorText"), "responded"),
    "output-available": _StateRule(
        frozenset({"resultProviderMetadata", "preliminary"}), ("input", "output"), ("errorText",), "granted"
    ),
    "output-error": _StateRule(
        frozenset({"rawInput", "resultProviderMetadata"}), ("errorText",), ("output",), "granted"
    ),
    "output-denied": _StateRule(_NONE, ("input", "approval"), ("output", "errorText"), "denied"),
}
_TOOL_KEYS: Final = frozenset(
    {"type", "toolCallId", "title", "toolMetadata", "state", "providerExecuted", "callProviderMetadata"}
    | {"input", "output", "errorText", "approval"}
)
_DYNAMIC_KEYS: Final = frozenset({"toolName", "dynamic"})
_APPROVAL_EXTENSIONS: Final = ("status", "requestedAt", "decidedAt")
_STEERING_KEYS: Final[Mapping[str, frozenset[str]]] = {
    "text": frozenset({"type", "text", "providerMetadata"}),
    "file": frozenset({"type", "mediaType", "filename", "url", "providerReference", "providerMetadata"}),
}
_UNION_LABELS: Final[Mapping[str, str]] = {"TextPart": "text", "FilePart": "file"}
"""Member labels pydantic puts in the error location of the steering-message part union."""
_NULLABLE: Final = frozenset({"metadata", "data", "input", "output", "raw_input", "descriptor", "input_schema_input"})
"""Fields the SDK types as `unknown` (so `null` is a value); any other optional field rejects `null`."""
_IDENTIFIER: Final = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")


@dataclass(frozen=True)
class _Options:
    allow_system: bool
    keep_extensions: bool
    for_conversion: bool = False


def _as_dict(value: object) -> dict[str, object] | None:
    return cast(dict[str, object], value) if isinstance(value, dict) else None


def _as_list(value: object) -> list[object] | None:
    return cast(list[object], value) if isinstance(value, list) else None


def _key(name: object) -> str:
    text = str(name)
    return f".{text}" if _IDENTIFIER.fullmatch(text) else f"[{text!r}]"


def validate_ui_messages(
    value: object,
    *,
    allow_system: bool = False,
    keep_extensions: bool = False,
    data_schemas: Mapping[str, Schema] | None = None,
    metadata_schema: Schema | None = None,
    root: str = "messages",
    for_conversion: bool = False,
) -> list[UIMessage]:
    """Validate plain JSON into `UIMessage` models, accepting and rejecting exactly what the SDK does.

    Args:
        value: The decoded JSON, normally a list of message objects.
        allow_system: Accept `role: "system"`. Off by default: a client must not inject a system prompt.
        keep_extensions: Keep Stepline's extension fields (`executionStartedAt`, approval
            `status`/`requestedAt`/`decidedAt`) and the per-state leftovers the reducer writes; for
            messages read back from Stepline's own store. By default they are stripped as the SDK does.
        data_schemas: Schemas for `data-<name>` parts by name; when given, a data part without a
            schema is rejected (as in the SDK) and `data` is replaced by the validated JSON.
        metadata_schema: Schema for every message's `metadata`.
        root: The path prefix of the list in error paths.
        for_conversion: Accept what the SDK's `convertToModelMessages` converts though its
            `validateUIMessages` rejects it: an `output-denied` part without `approval`.

    Raises:
        InvalidUIMessageError: With one `(path, reason)` pair per problem (at most `MAX_ISSUES`).
    """
    items = _as_list(value)
    if items is None:
        reason = "messages must be provided" if value is None else "must be an array of UI messages"
        raise InvalidUIMessageError([(root, reason)])
    if not items:
        raise InvalidUIMessageError([(root, "must not be empty")])
    options = _Options(allow_system=allow_system, keep_extensions=keep_extensions, for_conversion=for_conversion)
    messages: list[UIMessage] = []
    for index, item in enumerate(items):
        message, issues = _validate_message(item, f"{root}[{index}]", options)
        if message is None:
            raise InvalidUIMessageError(issues[:MAX_ISSUES])
        messages.append(message)
    issues = _apply_schemas(messages, root, data_schemas, metadata_schema)
    if issues:
        raise InvalidUIMessageError(issues[:MAX_ISSUES])
    return messages


def _validate_message(raw: object, path: str, options: _Options) -> tuple[UIMessage | None, list[Issue]]:
    bad_number = _non_finite_path(raw, path)
    if bad_number is not None:
        return None, [(bad_number, "is not a JSON value (numbers must be finite)")]
    prepared, issues = _prepare_message(raw, path, options)
    try:
        message = _MESSAGE.validate_python(prepared, strict=True, by_alias=True, by_name=False)
    except ValidationError as error:
        found = [issue for detail in error.errors() if (issue := _issue(detail, path, prepared, issues)) is not None]
        return None, _unique([*issues, *found])
    issues.extend(_null_issues(message, path))
    return (None, issues) if issues else (message, [])


def _unique(issues: list[Issue]) -> list[Issue]:
    return list(dict.fromkeys(issues))


def _non_finite_path(value: object, path: str) -> str | None:
    """The path of the first NaN or infinity (JSON cannot carry them), searched without recursion."""
    stack: list[tuple[object, str]] = [(value, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return where
        if (items := _as_list(node)) is not None:
            stack.extend((item, f"{where}[{i}]") for i, item in reversed(list(enumerate(items))))
        elif (mapping := _as_dict(node)) is not None:
            stack.extend((item, f"{where}{_key(k)}") for k, item in reversed(mapping.items()))
    return None


# --- the pass over the raw JSON -------------------------------------------------------------


def _prepare_message(raw: object, path: str, options: _Options) -> tuple[object, list[Issue]]:
    message = _as_dict(raw)
    if message is None:
        return raw, []
    issues: list[Issue] = []
    role = message.get("role")
    if role == "system" and not options.allow_system:
        issues.append((f"{path}.role", 'a client may not send a "system" message'))
    parts = _as_list(message.get("parts"))
    if parts is None:
        if "parts" not in message:  # the model would default it to []; the SDK requires the key
            issues.append((f"{path}.parts", "required field is missing"))
        return message, issues
    if not parts and role in ("user", "system"):
        issues.append((f"{path}.parts", "must contain at least one part (only an assistant message may be empty)"))
    prepared: list[object] = []
    for index, item in enumerate(parts):
        part, part_issues = _prepare_part(item, f"{path}.parts[{index}]", options)
        prepared.append(part)
        issues.extend(part_issues)
    return {**message, "parts": prepared}, issues


def _prepare_part(raw: object, path: str, options: _Options) -> tuple[object, list[Issue]]:
    part = _as_dict(raw)
    part_type = part.get("type") if part is not None else None
    if part is None or not isinstance(part_type, str):
        return raw, []
    if part_type.startswith("tool-") or part_type == "dynamic-tool":
        return _prepare_tool(part, path, options)
    if part_type.startswith("data-"):
        return part, [] if "data" in part else [(f"{path}.data", "required field is missing")]
    if part_type == "steering-message":
        return _prepare_steering(part, path, options)
    return part, []


def _prepare_steering(part: dict[str, object], path: str, options: _Options) -> tuple[object, list[Issue]]:
    inner = _as_list(part.get("parts"))
    if inner is None:
        return part, []
    issues: list[Issue] = []
    prepared: list[object] = []
    for index, item in enumerate(inner):
        entry = _as_dict(item)
        keys = _STEERING_KEYS.get(str(entry.get("type"))) if entry is not None else None
        if entry is None or keys is None:
            issues.append((f"{path}.parts[{index}]", "a steering message part must be a text or file part"))
            prepared.append(item)
        else:
            prepared.append(entry if options.keep_extensions else {k: v for k, v in entry.items() if k in keys})
    return {**part, "parts": prepared}, issues


def _prepare_tool(part: dict[str, object], path: str, options: _Options) -> tuple[object, list[Issue]]:
    state = part.get("state")
    rule = _TOOL_RULES.get(state) if isinstance(state, str) else None
    if rule is None:
        return part, []  # the model reports the missing or unknown state
    if not options.keep_extensions:
        allowed = _TOOL_KEYS | rule.extra | (_DYNAMIC_KEYS if part.get("type") == "dynamic-tool" else _NONE)
        part = {key: value for key, value in part.items() if key in allowed}
        if (approval := _as_dict(part.get("approval"))) is not None:
            part["approval"] = {k: v for k, v in approval.items() if k not in _APPROVAL_EXTENSIONS}
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
    approval = _as_dict(part.get("approval"))
    if approval is not None:
        issues.extend(_approval_issues(approval, rule.approval, f"{path}.approval", str(state)))
    return part, issues


def _approval_issues(approval: dict[str, object], rule: ApprovalRule, path: str, state: str) -> Iterator[Issue]:
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


# --- pydantic errors to issues --------------------------------------------------------------


_REASONS: Final[Mapping[str, str]] = {
    "missing": "required field is missing",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "int_type": "must be an integer",
    "int_from_float": "must be an integer",
    "float_type": "must be a number",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "list_type": "must be an array",
    "union_tag_invalid": "unknown part type",
    "union_tag_not_found": "unknown part type",
}


def _reason(detail: ErrorDetails) -> str:
    kind = detail["type"]
    ctx = detail.get("ctx") or {}
    if kind in _REASONS:
        return _REASONS[kind]
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected')}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        bound = next(iter(ctx.values()), "")
        return f"must be {kind.replace('_', ' ')} {bound}"
    if kind in ("value_error", "assertion_error", "invalid_part_type"):
        return detail["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return f"is invalid ({kind})"  # never pydantic's message: some quote the input


def _issue(detail: ErrorDetails, path: str, raw: object, known: list[Issue]) -> Issue | None:
    located = _locate(detail["loc"], raw, labels=True)
    if located is None:
        return None  # an error of a union member that the part's type does not select
    where, at_model = located
    where = path + where
    reported = any(p == where or p.startswith((f"{where}.", f"{where}[")) for p, _ in known)
    if at_model and detail["type"] == "value_error" and reported:
        return None  # a model-level rule that the raw pass has already reported with a precise path
    if where == f"{path}.role" and detail["type"] == "literal_error":
        return where, f"Unsupported role ({_reason(detail)})"  # the SDK's convertToModelMessages's words
    return where, _reason(detail)


def _locate(loc: Sequence[int | str], raw: object, *, labels: bool) -> tuple[str, bool] | None:
    """A pydantic error location as a JSON path, without union tags; also whether it ends at a model."""
    where = ""
    node: object = raw
    skip_label = False
    at_model = not loc
    for element in loc:
        if skip_label:
            skip_label, at_model = False, True
            selected = _UNION_LABELS.get(str(element))
            entry = _as_dict(node)
            if selected is not None and (entry is None or entry.get("type") != selected):
                return None
            continue
        at_model = False
        if isinstance(element, int):
            items = _as_list(node)
            node = items[element] if items is not None and 0 <= element < len(items) else None
            skip_label = labels and where.endswith(".parts")
            where += f"[{element}]"
        else:
            entry = _as_dict(node)
            node = entry.get(element) if entry is not None else None
            where += _key(element)
    return where, at_model


def _null_issues(model: BaseModel, path: str) -> Iterator[Issue]:
    """Explicit `null` where the SDK's schema says `optional` (absent is fine, `null` is not)."""
    fields = type(model).model_fields
    for name, field in fields.items():
        if name not in model.model_fields_set:
            continue
        value: object = getattr(model, name)
        where = f"{path}.{field.alias or to_camel(name)}"
        if value is None and name not in _NULLABLE:
            yield where, "must not be null (leave the field out instead)"
        elif isinstance(value, BaseModel):
            yield from _null_issues(value, where)
        elif (items := _as_list(value)) is not None:
            for index, item in enumerate(items):
                if isinstance(item, BaseModel):
                    yield from _null_issues(item, f"{where}[{index}]")


# --- caller-supplied schemas ----------------------------------------------------------------


def _apply_schemas(
    messages: list[UIMessage], root: str, data_schemas: Mapping[str, Schema] | None, metadata_schema: Schema | None
) -> list[Issue]:
    """Run the caller's schemas (metadata first, then data parts) and store the validated JSON."""
    for index, message in enumerate(messages):
        path = f"{root}[{index}]"
        if metadata_schema is not None:
            value, issues = _check_schema(metadata_schema, message.metadata, f"{path}.metadata")
            if issues:
                return issues
            if value is not None or "metadata" in message.model_fields_set:
                message.metadata = value
        if data_schemas is not None and (issues := _apply_data_schemas(message, path, data_schemas)):
            return issues
    return []


def _apply_data_schemas(message: UIMessage, path: str, schemas: Mapping[str, Schema]) -> list[Issue]:
    for index, part in enumerate(message.parts):
        if not isinstance(part, DataPart):
            continue
        where = f"{path}.parts[{index}].data"
        schema = schemas.get(part.type.removeprefix("data-"))
        if schema is None:
            return [(where, "no data schema is registered for this data part type")]
        value, issues = _check_schema(schema, part.data, where)
        if issues:
            return issues
        part.data = value
    return []


def _check_schema(schema: Schema, value: object, path: str) -> tuple[Any, list[Issue]]:
    """The validated value as JSON and no issues, or `None` and the issues."""
    try:
        if isinstance(schema, TypeAdapter):
            return schema.dump_python(schema.validate_python(value), mode="json", by_alias=True), []
        return schema.model_validate(value).model_dump(mode="json", by_alias=True), []
    except ValidationError as error:
        issues: list[Issue] = []
        for detail in error.errors():
            located = _locate(detail["loc"], value, labels=False)
            issues.append((path + (located[0] if located else ""), _reason(detail)))
        return None, issues
