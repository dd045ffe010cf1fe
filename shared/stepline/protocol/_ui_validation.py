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

Every problem is a `(path, reason)` pair; no reason quotes the value it rejects. The raw pass is
`_ui_raw.py`, the translation of pydantic's errors into issues `_ui_errors.py`; this module runs
them, then the caller's metadata and data-part schemas.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pydantic import BaseModel, TypeAdapter, ValidationError

from ..errors import InvalidUIMessageError
from ._ui_errors import issue_for, locate, null_issues, reason_for
from ._ui_raw import Issue, Options, as_list, non_finite_path, prepare_message
from .parts import DataPart, UIMessage

__all__ = ["Schema", "validate_ui_messages"]

Schema = type[BaseModel] | TypeAdapter[Any]
"""A metadata or data-part schema: a pydantic model class or a `TypeAdapter`."""

MAX_ISSUES: Final = 20
"""Untrusted input must not make the error grow without bound (the SDK stops at the first bad element)."""

_MESSAGE: Final = TypeAdapter(UIMessage)


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
    items = as_list(value)
    if items is None:
        reason = "messages must be provided" if value is None else "must be an array of UI messages"
        raise InvalidUIMessageError([(root, reason)])
    if not items:
        raise InvalidUIMessageError([(root, "must not be empty")])
    options = Options(allow_system=allow_system, keep_extensions=keep_extensions, for_conversion=for_conversion)
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


def _validate_message(raw: object, path: str, options: Options) -> tuple[UIMessage | None, list[Issue]]:
    bad_number = non_finite_path(raw, path)
    if bad_number is not None:
        return None, [(bad_number, "is not a JSON value (numbers must be finite)")]
    prepared, issues = prepare_message(raw, path, options)
    try:
        message = _MESSAGE.validate_python(prepared, strict=True, by_alias=True, by_name=False)
    except ValidationError as error:
        found = [issue for detail in error.errors() if (issue := issue_for(detail, path, prepared, issues)) is not None]
        return None, _unique([*issues, *found])
    issues.extend(null_issues(message, path))
    return (None, issues) if issues else (message, [])


def _unique(issues: list[Issue]) -> list[Issue]:
    return list(dict.fromkeys(issues))


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
            located = locate(detail["loc"], value, labels=False)
            issues.append((path + (located[0] if located else ""), reason_for(detail)))
        return None, issues
