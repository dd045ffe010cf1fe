"""OpenAI's built-in tools and text annotations in a Responses stream → V4 parts (pure).

Follows `doStream` of `@ai-sdk/openai` 4.0.118 part for part, so the UI chunks are the AI SDK's.
Every call is provider-executed; its call id is the output item's id, and names are the agent's
(`ToolNames`):

    output_item.added  web_search_call        tool-input-start, tool-input-end, tool-call (input "{}")
    output_item.done   web_search_call        tool-result {action, sources?} (status other than
                                              completed: an error result {status}); a `source`
                                              (url) per `action.sources` entry of a search
    output_item.added  code_interpreter_call  tool-input-start, tool-input-delta `{"containerId":…,"code":"`
    code_interpreter_call_code.delta          tool-input-delta (the code, JSON-escaped)
    code_interpreter_call_code.done           tool-input-delta `"}`, tool-input-end, tool-call {code, containerId}
    output_item.done   code_interpreter_call  tool-result {outputs}
    output_item.added  file_search_call       tool-call (input "{}")
    output_item.done   file_search_call       tool-result {queries, results}; a `source` (document)
                                              per retrieved file
    output_item.added  image_generation_call  tool-call (input "{}")
    image_generation_call.partial_image       tool-result {result: partial base64}, preliminary
    output_item.done   image_generation_call  tool-result {result: base64}
    output_text.annotation.added              kept for the message's text-end (citations and
                                              `annotations` metadata); a container file or file
                                              path becomes a `source` at once; a URL or file
                                              citation becomes one at the end of the stream unless
                                              the search or retrieval already listed its sources
"""

from __future__ import annotations

import json
import uuid
from typing import Any, cast

from pydantic import JsonValue

from ...protocol.chunks import Citation
from ..stream_parts import (
    ModelStreamPart,
    V4Source,
    V4ToolCall,
    V4ToolInputDelta,
    V4ToolInputEnd,
    V4ToolInputStart,
    V4ToolResult,
)
from .responses_tools import ToolNames

__all__ = ["ProviderToolStream"]

Parts = list[ModelStreamPart]
Json = dict[str, Any]

_ANNOTATION_KEYS: dict[str, tuple[str, ...]] = {
    "url_citation": ("type", "start_index", "end_index", "url", "title"),
    "file_citation": ("type", "file_id", "filename", "index"),
    "container_file_citation": ("type", "container_id", "file_id", "filename", "start_index", "end_index"),
    "file_path": ("type", "file_id", "index"),
}


def _compact(value: Any) -> str:
    """`JSON.stringify(value)`."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _escape(text: str) -> str:
    """A string's JSON form without its quotes (`escapeJSONDelta`)."""
    return _compact(text)[1:-1]


class ProviderToolStream:
    """The built-in tools' calls and the text annotations of one Responses stream."""

    def __init__(self, *, provider: str, tool_names: ToolNames) -> None:
        self._provider = provider
        self._names = tool_names
        self._code_calls: dict[int, tuple[str, str]] = {}  # output index -> (call id, container id)
        self._annotations: list[Json] = []  # of the message being streamed
        self._fallback: list[Json] = []  # URL and file citations, decided at the end
        self._has_search_sources = False
        self._has_file_results = False
        self._retrieved: set[str] = set()

    # --- tool items -----------------------------------------------------------------------------

    def item_added(self, item: Json, output_index: int | None) -> Parts:
        item_id = item.get("id")
        if not isinstance(item_id, str):
            return []
        match item.get("type"):
            case "web_search_call":
                name = self._names.to_custom("web_search")
                return [
                    V4ToolInputStart(id=item_id, tool_name=name, provider_executed=True),
                    V4ToolInputEnd(id=item_id),
                    V4ToolCall(tool_call_id=item_id, tool_name=name, input="{}", provider_executed=True),
                ]
            case "code_interpreter_call" if output_index is not None:
                container = str(item.get("container_id") or "")
                self._code_calls[output_index] = (item_id, container)
                name = self._names.to_custom("code_interpreter")
                return [
                    V4ToolInputStart(id=item_id, tool_name=name, provider_executed=True),
                    V4ToolInputDelta(id=item_id, delta=f'{{"containerId":"{container}","code":"'),
                ]
            case "file_search_call" | "image_generation_call" as kind:
                name = self._names.to_custom(kind.removesuffix("_call"))
                return [V4ToolCall(tool_call_id=item_id, tool_name=name, input="{}", provider_executed=True)]
            case _:
                return []

    def item_done(self, item: Json, output_index: int | None) -> Parts:
        item_id = item.get("id")
        if not isinstance(item_id, str):
            return []
        match item.get("type"):
            case "web_search_call":
                return self._web_search_done(item_id, item)
            case "code_interpreter_call":
                if output_index is not None:
                    self._code_calls.pop(output_index, None)
                result: Json = {"outputs": _code_outputs(item["outputs"])} if "outputs" in item else {}
                return [self._result(item_id, "code_interpreter", result)]
            case "file_search_call":
                return self._file_search_done(item_id, item)
            case "image_generation_call":
                return [self._result(item_id, "image_generation", {"result": item.get("result")})]
            case _:
                return []

    def code_delta(self, output_index: int | None, delta: str) -> Parts:
        call = self._code_calls.get(output_index) if output_index is not None else None
        return [] if call is None else [V4ToolInputDelta(id=call[0], delta=_escape(delta))]

    def code_done(self, output_index: int | None, code: str | None) -> Parts:
        call = self._code_calls.get(output_index) if output_index is not None else None
        if call is None:
            return []
        call_id, container = call
        name = self._names.to_custom("code_interpreter")
        return [
            V4ToolInputDelta(id=call_id, delta='"}'),
            V4ToolInputEnd(id=call_id),
            V4ToolCall(
                tool_call_id=call_id,
                tool_name=name,
                input=_compact({"code": code, "containerId": container}),
                provider_executed=True,
            ),
        ]

    def partial_image(self, item_id: str | None, image: str | None) -> Parts:
        if item_id is None:
            return []
        part = self._result(item_id, "image_generation", {"result": image})
        part.preliminary = True
        return [part]

    def _result(self, call_id: str, api_name: str, result: Json, *, is_error: bool | None = None) -> V4ToolResult:
        return V4ToolResult(
            tool_call_id=call_id,
            tool_name=self._names.to_custom(api_name),
            result=cast(JsonValue, result),
            is_error=is_error,
        )

    def _web_search_done(self, item_id: str, item: Json) -> Parts:
        status = item.get("status")
        action = item.get("action") if isinstance(item.get("action"), dict) else None
        if status == "completed":
            parts: Parts = [self._result(item_id, "web_search", _web_search_output(action))]
        else:
            parts = [self._result(item_id, "web_search", {"status": status}, is_error=True)]
        if action is not None and action.get("type") == "search":
            for source in _dicts(action.get("sources")) or []:
                if source.get("type") == "url":
                    self._has_search_sources = True
                    parts.append(V4Source(source_type="url", id=self._source_id(), url=source.get("url")))
        return parts

    def _file_search_done(self, item_id: str, item: Json) -> Parts:
        results = _dicts(item.get("results"))
        output: Json = {
            "queries": item.get("queries"),
            "results": None
            if results is None
            else [
                {
                    "attributes": r.get("attributes"),
                    "fileId": r.get("file_id"),
                    "filename": r.get("filename"),
                    "score": r.get("score"),
                    "text": r.get("text"),
                }
                for r in results
            ],
        }
        parts: Parts = [self._result(item_id, "file_search", output)]
        for result in results or []:
            self._has_file_results = True
            file_id = result.get("file_id")
            if not isinstance(file_id, str) or file_id in self._retrieved:
                continue
            self._retrieved.add(file_id)
            filename = result.get("filename")
            parts.append(
                V4Source(
                    source_type="document",
                    id=self._source_id(),
                    media_type="text/plain",
                    title=filename,
                    filename=filename,
                    provider_metadata={self._provider: {"type": "file_search", "fileId": file_id}},
                )
            )
        return parts

    # --- annotations ----------------------------------------------------------------------------

    def message_started(self) -> None:
        self._annotations = []

    def annotation(self, raw: Json | None) -> Parts:
        annotation = _annotation(raw)
        if annotation is None:
            return []
        self._annotations.append(annotation)
        if annotation["type"] in ("url_citation", "file_citation"):
            self._fallback.append(annotation)  # retrieval events may still follow: decided at the end
            return []
        return [self._annotation_source(annotation, self._source_id())]

    def message_done(self) -> tuple[list[Citation] | None, dict[str, JsonValue]]:
        """The finished message's citations and the `annotations` for its metadata."""
        annotations, self._annotations = self._annotations, []
        citations = [self._citation(a) for a in annotations if a["type"] != "file_path"]
        metadata: dict[str, JsonValue] = {"annotations": cast(JsonValue, annotations)} if annotations else {}
        return (citations or None), metadata

    def _citation(self, annotation: Json) -> Citation:
        """`mapOpenAIResponsesCitations`: the source (its id the URL or file id) and the cited range."""
        source_id = annotation["url"] if annotation["type"] == "url_citation" else annotation["file_id"]
        fields: Json = {"source": self._annotation_source(annotation, source_id).to_wire()}
        if "start_index" in annotation:
            fields["start_index"] = annotation["start_index"]
            fields["end_index"] = annotation["end_index"]
        return Citation(**fields)

    def finish(self) -> Parts:
        """The citations' sources nothing else listed (before `finish`)."""
        parts: Parts = []
        for annotation in self._fallback:
            kind = annotation["type"]
            if (kind == "url_citation" and self._has_search_sources) or (
                kind == "file_citation" and self._has_file_results
            ):
                continue
            parts.append(self._annotation_source(annotation, self._source_id()))
        self._fallback = []
        return parts

    def _annotation_source(self, annotation: Json, source_id: str) -> V4Source:
        """`mapOpenAIResponsesAnnotationSource`."""
        if annotation["type"] == "url_citation":
            return V4Source(source_type="url", id=source_id, url=annotation["url"], title=annotation["title"])
        is_path = annotation["type"] == "file_path"
        filename = annotation["file_id"] if is_path else annotation.get("filename")
        metadata: dict[str, JsonValue] = {"type": annotation["type"], "fileId": annotation["file_id"]}
        if annotation["type"] == "container_file_citation":
            metadata["containerId"] = annotation["container_id"]
        else:
            metadata["index"] = annotation.get("index")
        return V4Source(
            source_type="document",
            id=source_id,
            media_type="application/octet-stream" if is_path else "text/plain",
            title=filename,
            filename=filename,
            provider_metadata={self._provider: metadata},
        )

    def _source_id(self) -> str:
        # Random like the SDK's `generateId()`: unique across the steps of one message.
        return f"src_{uuid.uuid4().hex[:16]}"


_SOURCE_KEYS = {"url": ("type", "url"), "api": ("type", "name")}
_OUTPUT_KEYS = {"logs": ("type", "logs"), "image": ("type", "url")}


def _keep(entry: Json, keys: dict[str, tuple[str, ...]]) -> Json:
    """The fields the SDK's schema keeps for an entry of this type (it drops the others)."""
    wanted = keys.get(str(entry.get("type")))
    return entry if wanted is None else {key: entry[key] for key in wanted if key in entry}


def _code_outputs(value: Any) -> list[Json] | None:
    outputs = _dicts(value)
    return None if outputs is None else [_keep(output, _OUTPUT_KEYS) for output in outputs]


def _dicts(value: Any) -> list[Json] | None:
    """The objects of a JSON array (None when `value` is not an array)."""
    if not isinstance(value, list):
        return None
    return [cast(Json, entry) for entry in cast(list[Any], value) if isinstance(entry, dict)]


def _annotation(raw: Json | None) -> Json | None:
    """The annotation with the fields the SDK keeps, in its order; None for one it does not know."""
    if raw is None:
        return None
    keys = _ANNOTATION_KEYS.get(str(raw.get("type")))
    if keys is None or any(key not in raw for key in keys):
        return None
    return {key: raw[key] for key in keys}


def _web_search_output(action: Json | None) -> Json:
    """`mapWebSearchOutput`: the action in the SDK's camelCase, with the sources of a search."""
    if action is None:
        return {}
    match action.get("type"):
        case "search":
            search: Json = {"type": "search"}
            if action.get("query") is not None:
                search["query"] = action["query"]
            if action.get("queries") is not None:
                search["queries"] = action["queries"]
            output: Json = {"action": search}
            if action.get("sources") is not None:
                output["sources"] = [_keep(source, _SOURCE_KEYS) for source in _dicts(action["sources"]) or []]
            return output
        case "open_page":
            return {"action": {"type": "openPage", "url": action.get("url")}}
        case "find_in_page":
            return {"action": {"type": "findInPage", "url": action.get("url"), "pattern": action.get("pattern")}}
        case _:
            return {}
