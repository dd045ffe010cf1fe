"""Pydantic's validation errors as `(path, reason)` issues, in JSON paths and without quoting values.

`_ui_validation.py` turns each error of the `UIMessage` models into an issue here: the location
becomes a JSON path (union tags dropped, errors of union members the part's type does not select
ignored), the reason is Stepline's own words, never pydantic's message (some quote the input), and
an explicit `null` where the SDK's schema says `optional` is reported.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Final

from pydantic import BaseModel
from pydantic.alias_generators import to_camel
from pydantic_core import ErrorDetails

from ._ui_raw import Issue, as_dict, as_list, json_key

NULLABLE: Final = frozenset({"metadata", "data", "input", "output", "raw_input", "descriptor", "input_schema_input"})
"""Fields the SDK types as `unknown` (so `null` is a value); any other optional field rejects `null`."""
UNION_LABELS: Final[Mapping[str, str]] = {"TextPart": "text", "FilePart": "file"}
"""Member labels pydantic puts in the error location of the steering-message part union."""

REASONS: Final[Mapping[str, str]] = {
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


def reason_for(detail: ErrorDetails) -> str:
    kind = detail["type"]
    ctx = detail.get("ctx") or {}
    if kind in REASONS:
        return REASONS[kind]
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected')}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        bound = next(iter(ctx.values()), "")
        return f"must be {kind.replace('_', ' ')} {bound}"
    if kind in ("value_error", "assertion_error", "invalid_part_type"):
        return detail["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return f"is invalid ({kind})"  # never pydantic's message: some quote the input


def issue_for(detail: ErrorDetails, path: str, raw: object, known: list[Issue]) -> Issue | None:
    located = locate(detail["loc"], raw, labels=True)
    if located is None:
        return None  # an error of a union member that the part's type does not select
    where, at_model = located
    where = path + where
    reported = any(p == where or p.startswith((f"{where}.", f"{where}[")) for p, _ in known)
    if at_model and detail["type"] == "value_error" and reported:
        return None  # a model-level rule that the raw pass has already reported with a precise path
    if where == f"{path}.role" and detail["type"] == "literal_error":
        return where, f"Unsupported role ({reason_for(detail)})"  # the SDK's convertToModelMessages's words
    return where, reason_for(detail)


def locate(loc: Sequence[int | str], raw: object, *, labels: bool) -> tuple[str, bool] | None:
    """A pydantic error location as a JSON path, without union tags; also whether it ends at a model."""
    where = ""
    node: object = raw
    skip_label = False
    at_model = not loc
    for element in loc:
        if skip_label:
            skip_label, at_model = False, True
            selected = UNION_LABELS.get(str(element))
            entry = as_dict(node)
            if selected is not None and (entry is None or entry.get("type") != selected):
                return None
            continue
        at_model = False
        if isinstance(element, int):
            items = as_list(node)
            node = items[element] if items is not None and 0 <= element < len(items) else None
            skip_label = labels and where.endswith(".parts")
            where += f"[{element}]"
        else:
            entry = as_dict(node)
            node = entry.get(element) if entry is not None else None
            where += json_key(element)
    return where, at_model


def null_issues(model: BaseModel, path: str) -> Iterator[Issue]:
    """Explicit `null` where the SDK's schema says `optional` (absent is fine, `null` is not)."""
    fields = type(model).model_fields
    for name, field in fields.items():
        if name not in model.model_fields_set:
            continue
        value: object = getattr(model, name)
        where = f"{path}.{field.alias or to_camel(name)}"
        if value is None and name not in NULLABLE:
            yield where, "must not be null (leave the field out instead)"
        elif isinstance(value, BaseModel):
            yield from null_issues(value, where)
        elif (items := as_list(value)) is not None:
            for index, item in enumerate(items):
                if isinstance(item, BaseModel):
                    yield from null_issues(item, f"{where}[{index}]")
