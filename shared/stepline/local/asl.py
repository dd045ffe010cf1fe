"""The part of the Amazon States Language that stepline/stack/statemachine/agent_run.asl.json uses, evaluated.

Pure functions over JSON values, for `stepline.local.engine`: reference paths (`$.a.b`, and `$$.`
for the context object), `Parameters` and `ResultSelector` templates (keys ending `.$`), the two
intrinsic functions the ASL calls (`States.Format`, `States.MathAdd`), `ResultPath`, the
matching of `Retry` and `Catch` rules, and the choice rules the Route uses (`And`, `StringEquals`,
`BooleanEquals`, `IsPresent`). `check_definition` refuses a definition that uses anything
else, so a new state or field in the ASL fails at start, never half-way through a run.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any, cast

__all__ = [
    "AslError",
    "apply_result_path",
    "catcher_for",
    "check_definition",
    "evaluate",
    "expression",
    "next_choice",
    "read_path",
    "retry_delay",
]

TASK_RESOURCES = frozenset(
    {
        "arn:aws:states:::lambda:invoke",
        "arn:aws:states:::lambda:invoke.waitForTaskToken",
        "arn:aws:states:::states:startExecution",
    }
)
_TASK_FIELDS = frozenset(
    {"Type", "Resource", "Parameters", "ResultSelector", "ResultPath", "Retry", "Catch", "Next", "End"}
    | {"TimeoutSecondsPath", "Comment"}
)
_FIELDS = {
    "Task": _TASK_FIELDS,
    "Choice": frozenset({"Type", "Choices", "Default", "Comment"}),
    "Succeed": frozenset({"Type", "Comment"}),
    "Fail": frozenset({"Type", "Error", "Cause", "Comment"}),
}
_INTRINSIC = re.compile(r"^(States\.[A-Za-z]+)\((.*)\)$", re.DOTALL)


class AslError(Exception):
    """A States error raised by the interpreter itself (a path that does not resolve, say)."""

    def __init__(self, error: str, cause: str) -> None:
        super().__init__(f"{error}: {cause}")
        self.error = error
        self.cause = cause


def check_definition(definition: Mapping[str, Any]) -> None:
    """Refuse a definition with a state type, field, resource or choice rule this module does not run."""
    states: dict[str, Any] = definition["States"]
    if definition["StartAt"] not in states:
        raise ValueError(f"StartAt {definition['StartAt']} is not a state")
    for name, state in states.items():
        kind = state.get("Type")
        if kind not in _FIELDS:
            raise ValueError(f"state {name}: type {kind} is not supported locally")
        unknown = set(state) - _FIELDS[kind]
        if unknown:
            raise ValueError(f"state {name}: {sorted(unknown)} not supported locally")
        if kind == "Task" and state["Resource"] not in TASK_RESOURCES:
            raise ValueError(f"state {name}: resource {state['Resource']} not supported locally")
        for rule in state.get("Choices", []):
            if "Next" not in rule or not _supported_rule({k: v for k, v in rule.items() if k != "Next"}):
                raise ValueError(f"state {name}: a choice rule other than And, StringEquals, BooleanEquals, IsPresent")


_COMPARISONS = frozenset({"StringEquals", "BooleanEquals", "IsPresent"})


def _supported_rule(rule: Mapping[str, Any]) -> bool:
    if set(rule) == {"And"}:
        return all(_supported_rule(inner) for inner in rule["And"])
    return len(rule) == 2 and "Variable" in rule and next(k for k in rule if k != "Variable") in _COMPARISONS


def read_path(data: Any, path: str, context: Mapping[str, Any]) -> Any:
    """The value at a reference path: `$` the state's input, `$$` the context object."""
    if path.startswith("$$"):
        value, rest = cast(Any, context), path[2:]
    elif path.startswith("$"):
        value, rest = data, path[1:]
    else:
        raise AslError("States.Runtime", f"{path} is not a path")
    for key in filter(None, rest.split(".")):
        if not isinstance(value, dict) or key not in value:
            raise AslError("States.Runtime", f"the path {path} does not resolve")
        value = cast(dict[str, Any], value)[key]
    return value


def evaluate(template: Any, data: Any, context: Mapping[str, Any]) -> Any:
    """A `Parameters` or `ResultSelector` template filled in (a key ending `.$` is an expression)."""
    if isinstance(template, dict):
        filled: dict[str, Any] = {}
        for key, value in cast(dict[str, Any], template).items():
            if key.endswith(".$"):
                filled[key[:-2]] = expression(str(value), data, context)
            else:
                filled[key] = evaluate(value, data, context)
        return filled
    if isinstance(template, list):
        return [evaluate(item, data, context) for item in cast(list[Any], template)]
    return template


def expression(text: str, data: Any, context: Mapping[str, Any]) -> Any:
    """A path, or an intrinsic function call."""
    text = text.strip()
    found = _INTRINSIC.match(text)
    if found is None:
        return read_path(data, text, context)
    name, arguments = found[1], [_argument(a, data, context) for a in _split(found[2])]
    if name == "States.Format":
        template, *values = arguments
        pieces = str(template).split("{}")
        if len(pieces) != len(values) + 1:
            raise AslError("States.Runtime", f"States.Format: {len(values)} arguments for {len(pieces) - 1} {{}}")
        return pieces[0] + "".join(str(value) + piece for value, piece in zip(values, pieces[1:], strict=True))
    if name == "States.MathAdd":
        left, right = arguments
        return int(left) + int(right)
    raise AslError("States.Runtime", f"the intrinsic function {name} is not supported locally")


def _argument(text: str, data: Any, context: Mapping[str, Any]) -> Any:
    text = text.strip()
    if text.startswith("'") and text.endswith("'"):
        return text[1:-1]
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return expression(text, data, context)


def _split(arguments: str) -> list[str]:
    """Split at the commas outside quotes and parentheses."""
    parts: list[str] = []
    depth, quoted, start = 0, False, 0
    for index, char in enumerate(arguments):
        if char == "'":
            quoted = not quoted
        elif not quoted and char == "(":
            depth += 1
        elif not quoted and char == ")":
            depth -= 1
        elif not quoted and depth == 0 and char == ",":
            parts.append(arguments[start:index])
            start = index + 1
    tail = arguments[start:]
    return [*parts, tail] if tail.strip() or parts else parts


def apply_result_path(data: Any, path: str | None, result: Any) -> Any:
    """The state's output: the input with `result` at `path` (`None`: the input unchanged; `$`: the result)."""
    if path is None:
        return data
    if path == "$":
        return result
    if not path.startswith("$.") or not isinstance(data, dict):
        raise AslError("States.Runtime", f"ResultPath {path} cannot be applied")
    output = copy.copy(cast(dict[str, Any], data))
    target = output
    *parents, last = path[2:].split(".")
    for key in parents:
        child = dict(cast(dict[str, Any], target.get(key) or {}))
        target[key] = child
        target = child
    target[last] = result
    return output


def _matches(names: list[str], error: str) -> bool:
    """Whether a rule's `ErrorEquals` takes the error, as Step Functions matches.

    `States.ALL` takes any error but `States.Runtime` (never retried or caught), `States.TaskFailed`
    any but that and `States.Timeout`.
    """
    if error in names:
        return True
    if error == "States.Runtime":
        return False
    if "States.ALL" in names:
        return True
    return "States.TaskFailed" in names and error != "States.Timeout"


def retry_delay(retriers: list[dict[str, Any]], error: str, attempts: dict[int, int]) -> float | None:
    """Seconds before the next attempt, or None: no retry left. `attempts` counts per retrier (updated)."""
    for index, retrier in enumerate(retriers):
        if _matches(retrier["ErrorEquals"], error):
            done = attempts.get(index, 0)
            if done >= int(retrier.get("MaxAttempts", 3)):
                return None
            attempts[index] = done + 1
            return float(retrier.get("IntervalSeconds", 1)) * float(retrier.get("BackoffRate", 2.0)) ** done
    return None


def catcher_for(catchers: list[dict[str, Any]], error: str) -> dict[str, Any] | None:
    """The first `Catch` rule that takes this error."""
    return next((c for c in catchers if _matches(c["ErrorEquals"], error)), None)


def next_choice(state: Mapping[str, Any], data: Any, context: Mapping[str, Any]) -> str:
    """The state a `Choice` goes to."""
    for rule in state["Choices"]:
        if _holds(rule, data, context):
            return str(rule["Next"])
    if "Default" not in state:
        raise AslError("States.NoChoiceMatched", "no choice matched and there is no Default")
    return str(state["Default"])


def _holds(rule: Mapping[str, Any], data: Any, context: Mapping[str, Any]) -> bool:
    """A choice rule's test. `And` stops at its first false test, so `IsPresent` guards the tests after it."""
    if "And" in rule:
        return all(_holds(inner, data, context) for inner in rule["And"])
    if "IsPresent" in rule:
        try:
            read_path(data, rule["Variable"], context)
        except AslError:
            return not rule["IsPresent"]
        return bool(rule["IsPresent"])
    value = read_path(data, rule["Variable"], context)
    if "BooleanEquals" in rule:
        return isinstance(value, bool) and value == rule["BooleanEquals"]
    return isinstance(value, str) and value == rule["StringEquals"]
