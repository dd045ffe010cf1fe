"""Checks of emitted spans and metrics against the OpenTelemetry semantic-conventions package.

Names and values are read from `opentelemetry-semantic-conventions`' own constants and enums (the
GenAI, FaaS, error, HTTP and cloud attribute modules), never copied by hand: an attribute a span
carries is valid when it is one of those constants (and not one the package marks as replaced by
another) or Stepline's own `stepline.*`. The GenAI operation and provider values must be members
of the package's enums (`scripted`, the test model, is the one custom provider value), and a GenAI
span is named `{gen_ai.operation.name} {model | agent | tool}` as the conventions name them.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from types import ModuleType
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.semconv._incubating.attributes import (
    cloud_attributes,
    faas_attributes,
    gen_ai_attributes,
    http_attributes,
)
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics
from opentelemetry.semconv.attributes import error_attributes
from opentelemetry.semconv.attributes import http_attributes as stable_http

CUSTOM_PROVIDERS = frozenset({"scripted"})


def _constants(module: ModuleType) -> dict[str, str]:
    """`{value: docstring}` of a semconv module's string constants."""
    source = inspect.getsource(module)
    found: dict[str, str] = {}
    for name, value in vars(module).items():
        if name.isupper() and isinstance(value, str):
            start = source.find(f"{name}: Final = ")
            doc_start = source.find('"""', start)
            doc_end = source.find('"""', doc_start + 3)
            found[value] = source[doc_start + 3 : doc_end] if start >= 0 else ""
    return found


_MODULES = (gen_ai_attributes, faas_attributes, cloud_attributes, error_attributes, http_attributes, stable_http)
KNOWN: dict[str, str] = {}
for _module in _MODULES:
    KNOWN.update(_constants(_module))
REPLACED = frozenset(key for key, doc in KNOWN.items() if "Replaced by" in doc or "Removed" in doc)
OPERATIONS = frozenset(v.value for v in gen_ai_attributes.GenAiOperationNameValues)
PROVIDERS = frozenset(v.value for v in gen_ai_attributes.GenAiProviderNameValues) | CUSTOM_PROVIDERS
TOKEN_TYPES = frozenset(v.value for v in gen_ai_attributes.GenAiTokenTypeValues)
METRICS = frozenset({gen_ai_metrics.GEN_AI_CLIENT_TOKEN_USAGE, gen_ai_metrics.GEN_AI_CLIENT_OPERATION_DURATION})
OP = gen_ai_attributes.GEN_AI_OPERATION_NAME


def attribute_problems(attributes: dict[str, Any], where: str) -> list[str]:
    """What is wrong with one span's (or data point's) attributes, as readable lines."""
    problems: list[str] = []
    for key, value in attributes.items():
        if key.startswith("stepline."):
            continue
        if key not in KNOWN:
            problems.append(f"{where}: {key} is not a semantic-convention attribute")
        elif key in REPLACED:
            problems.append(f"{where}: {key} is deprecated (replaced) in the conventions")
        if key == OP and value not in OPERATIONS:
            problems.append(f"{where}: {key}={value!r} is not a GenAI operation")
        if key == gen_ai_attributes.GEN_AI_PROVIDER_NAME and value not in PROVIDERS:
            problems.append(f"{where}: {key}={value!r} is not a GenAI provider name")
        if key == gen_ai_attributes.GEN_AI_TOKEN_TYPE and value not in TOKEN_TYPES:
            problems.append(f"{where}: {key}={value!r} is not a GenAI token type")
    return problems


def _subject(span: ReadableSpan) -> Any:
    attributes = dict(span.attributes or {})
    return {
        gen_ai_attributes.GenAiOperationNameValues.CHAT.value: attributes.get(gen_ai_attributes.GEN_AI_REQUEST_MODEL),
        gen_ai_attributes.GenAiOperationNameValues.INVOKE_AGENT.value: attributes.get(
            gen_ai_attributes.GEN_AI_AGENT_NAME
        ),
        gen_ai_attributes.GenAiOperationNameValues.EXECUTE_TOOL.value: attributes.get(
            gen_ai_attributes.GEN_AI_TOOL_NAME
        ),
    }.get(str(attributes.get(OP)))


def span_problems(spans: Iterable[ReadableSpan]) -> list[str]:
    """Every convention problem of `spans` (empty when they are all valid)."""
    problems: list[str] = []
    for span in spans:
        attributes = dict(span.attributes or {})
        problems += attribute_problems(attributes, span.name)
        operation = attributes.get(OP)
        if operation is not None and span.name != f"{operation} {_subject(span)}":
            problems.append(f"{span.name}: a {operation} span is named '{operation} {_subject(span)}'")
        for link in span.links:
            problems += attribute_problems(dict(link.attributes or {}), f"{span.name} (link)")
    return problems


def metric_problems(metrics_data: Any) -> list[str]:
    """Problems of exported GenAI metrics: known names, valid attributes on every data point."""
    problems: list[str] = []
    for resource in metrics_data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name.startswith("gen_ai.") and metric.name not in METRICS:
                    problems.append(f"{metric.name} is not a GenAI client metric")
                for point in metric.data.data_points:
                    problems += attribute_problems(dict(point.attributes or {}), metric.name)
    return problems
