"""Responses API streams for OpenAI's built-in tools, as OpenAI sends them.

Written from the `openai` SDK's event and item types (`openai/types/responses/`):
`ResponseWebSearchCall{InProgress,Searching,Completed}Event`, `ResponseFunctionWebSearch`,
`ResponseFileSearchCall*Event`, `ResponseFileSearchToolCall`, `ResponseCodeInterpreterCall*Event`
(`…_code.delta`, `…_code.done`, `…interpreting`, `…completed`), `ResponseCodeInterpreterToolCall`,
`ResponseImageGenCall*Event` (`…partial_image`), `ImageGenerationCall`, and
`ResponseOutputTextAnnotationAddedEvent` with `url_citation` / `file_citation` annotations.

Each builder returns one whole response: the tool's call item (output index 0), then a message
(output index 1) whose text cites what the tool found, then `response.completed`.
"""

from __future__ import annotations

from typing import Any

Event = dict[str, Any]

CREATED = 1_700_000_000
IMAGE_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
"""A 1x1 PNG."""
PARTIAL_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def _response(response_id: str, status: str, model: str, **fields: Any) -> dict[str, Any]:
    return {"id": response_id, "object": "response", "created_at": CREATED, "model": model, "status": status, **fields}


def _frame(response_id: str, model: str, body: list[Event]) -> list[Event]:
    usage = {
        "input_tokens": 20,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 8,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 28,
    }
    return [
        {"type": "response.created", "response": _response(response_id, "in_progress", model, output=[])},
        {"type": "response.in_progress", "response": _response(response_id, "in_progress", model, output=[])},
        *body,
        {"type": "response.completed", "response": _response(response_id, "completed", model, usage=usage)},
    ]


def message_events(item_id: str, text: str, annotations: list[dict[str, Any]], *, output_index: int = 1) -> list[Event]:
    """A message item whose text is streamed in two deltas, then annotated."""
    base = {"item_id": item_id, "output_index": output_index, "content_index": 0}
    half = len(text) // 2
    events: list[Event] = [
        {
            "type": "response.output_item.added",
            "output_index": output_index,
            "item": {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []},
        },
        {"type": "response.content_part.added", **base, "part": {"type": "output_text", "text": "", "annotations": []}},
        {"type": "response.output_text.delta", **base, "delta": text[:half], "logprobs": []},
        {"type": "response.output_text.delta", **base, "delta": text[half:], "logprobs": []},
    ]
    events.extend(
        {"type": "response.output_text.annotation.added", **base, "annotation_index": index, "annotation": annotation}
        for index, annotation in enumerate(annotations)
    )
    content = [{"type": "output_text", "text": text, "annotations": annotations}]
    events += [
        {"type": "response.output_text.done", **base, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **base, "part": content[0]},
        {
            "type": "response.output_item.done",
            "output_index": output_index,
            "item": {"id": item_id, "type": "message", "status": "completed", "role": "assistant", "content": content},
        },
    ]
    return events


def web_search_response(
    *,
    response_id: str = "resp_ws",
    call_id: str = "ws_1",
    query: str = "stepline durable agents",
    sources: list[str] | None = None,
    cited: tuple[str, str] = ("https://example.com/stepline", "Stepline"),
    status: str = "completed",
    model: str = "gpt-4.1",
) -> list[Event]:
    """A web search (`action.sources` when `sources` is given), then an answer citing `cited`."""
    action: dict[str, Any] = {"type": "search", "query": query, "queries": [query]}
    if sources is not None:
        action["sources"] = [{"type": "url", "url": url} for url in sources]
    marker = {"item_id": call_id, "output_index": 0}
    text = "Stepline runs each step in a Lambda."
    url, title = cited
    annotation = {"type": "url_citation", "start_index": 0, "end_index": len(text), "url": url, "title": title}
    body: list[Event] = [
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"id": call_id, "type": "web_search_call", "status": "in_progress", "action": {"type": "search"}},
        },
        {"type": "response.web_search_call.in_progress", **marker},
        {"type": "response.web_search_call.searching", **marker},
        {"type": "response.web_search_call.completed", **marker},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {"id": call_id, "type": "web_search_call", "status": status, "action": action},
        },
        *message_events("msg_ws", text, [annotation]),
    ]
    return _frame(response_id, model, body)


def file_search_response(*, response_id: str = "resp_fs", call_id: str = "fs_1", model: str = "gpt-4.1") -> list[Event]:
    """A file search with two results from one file and one from another, then a cited answer."""
    marker = {"item_id": call_id, "output_index": 0}
    results = [
        {"attributes": {"team": "infra"}, "file_id": "file_a", "filename": "runbook.md", "score": 0.91, "text": "One"},
        {"attributes": {}, "file_id": "file_a", "filename": "runbook.md", "score": 0.72, "text": "Step two"},
        {"attributes": {}, "file_id": "file_b", "filename": "design.pdf", "score": 0.55, "text": "Design"},
    ]
    item = {"id": call_id, "type": "file_search_call", "status": "in_progress", "queries": [], "results": None}
    done = {**item, "status": "completed", "queries": ["how to deploy"], "results": results}
    annotation = {"type": "file_citation", "file_id": "file_a", "filename": "runbook.md", "index": 12}
    body: list[Event] = [
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.file_search_call.in_progress", **marker},
        {"type": "response.file_search_call.searching", **marker},
        {"type": "response.file_search_call.completed", **marker},
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        *message_events("msg_fs", "Deploy with make.", [annotation]),
    ]
    return _frame(response_id, model, body)


def code_interpreter_response(
    *, response_id: str = "resp_ci", call_id: str = "ci_1", container: str = "cntr_1", model: str = "gpt-4.1"
) -> list[Event]:
    """Code streamed in three deltas (with a quote and a newline to escape), its logs, an answer."""
    marker = {"item_id": call_id, "output_index": 0}
    fragments = ["import math\n", 'print("sqrt", ', "math.sqrt(2))"]
    code = "".join(fragments)
    item = {
        "id": call_id,
        "type": "code_interpreter_call",
        "status": "in_progress",
        "container_id": container,
        "code": "",
        "outputs": None,
    }
    outputs = [{"type": "logs", "logs": "sqrt 1.4142135623730951\n"}]
    body: list[Event] = [
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.code_interpreter_call.in_progress", **marker},
        *({"type": "response.code_interpreter_call_code.delta", **marker, "delta": fragment} for fragment in fragments),
        {"type": "response.code_interpreter_call_code.done", **marker, "code": code},
        {"type": "response.code_interpreter_call.interpreting", **marker},
        {"type": "response.code_interpreter_call.completed", **marker},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**item, "status": "completed", "code": code, "outputs": outputs},
        },
        *message_events("msg_ci", "The square root of 2 is 1.414.", []),
    ]
    return _frame(response_id, model, body)


def image_generation_response(
    *, response_id: str = "resp_ig", call_id: str = "ig_1", model: str = "gpt-4.1"
) -> list[Event]:
    """An image with one partial preview, then a short answer."""
    marker = {"item_id": call_id, "output_index": 0}
    item = {"id": call_id, "type": "image_generation_call", "status": "in_progress", "result": None}
    body: list[Event] = [
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.image_generation_call.in_progress", **marker},
        {"type": "response.image_generation_call.generating", **marker},
        {
            "type": "response.image_generation_call.partial_image",
            **marker,
            "partial_image_index": 0,
            "partial_image_b64": PARTIAL_B64,
            "size": "1024x1024",
            "quality": "low",
            "output_format": "png",
            "background": "opaque",
        },
        {"type": "response.image_generation_call.completed", **marker},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {
                **item,
                "status": "completed",
                "result": IMAGE_B64,
                "output_format": "png",
                "quality": "low",
                "size": "1024x1024",
                "background": "opaque",
                "revised_prompt": "a red dot",
            },
        },
        *message_events("msg_ig", "Here is the image.", []),
    ]
    return _frame(response_id, model, body)
