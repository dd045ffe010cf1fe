"""Server tool blocks and citations of an Anthropic stream → V4 parts, as `@ai-sdk/anthropic` maps them.

After `doStream` of `src/anthropic-language-model.ts` and `src/map-anthropic-citation.ts` (4.0.105):

    server_tool_use name            tool name        input gets `type`
      web_search, web_fetch           the same         -
      code_execution                  code_execution   programmatic-tool-call
      bash_code_execution             code_execution   bash_code_execution
      text_editor_code_execution      code_execution   text_editor_code_execution

    web_search_tool_result          tool-result: each result camelCased (url, title, pageAge,
                                    encryptedContent, type), then a url `source` per result;
                                    an error → tool-result isError {type, errorCode}
    web_fetch_tool_result           tool-result {type, url, retrievedAt, content: {type, title,
                                    citations, source: {type, mediaType, data}}}; the document is
                                    remembered so a citation of it becomes a document source;
                                    an error → isError {type, errorCode}
    code_execution_tool_result      tool-result {type, stdout | encrypted_stdout, stderr,
                                    return_code, content}; an error → isError {type, errorCode}
    bash_/text_editor_code_execution_tool_result
                                    tool-result with the content as sent (errors included: the
                                    SDK does not flag them)

A citation is kept on its text block (text-end's `citations` and its provider metadata, so the
next request sends it back with its `encrypted_index`); a document citation is also a `source`
right away, a web citation only at the end of a message without search results.

Pure: pydantic, the standard library and `stepline` only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import JsonValue

from ...protocol._json import dumps, loads_strict
from ...protocol.chunks import Citation
from ...protocol.model_messages import ModelFilePart, ModelMessage, UserModelMessage
from ..stream_parts import ModelStreamPart, V4Source, V4ToolResult
from .fields import as_dict, pick

__all__ = [
    "SERVER_TOOL_NAMES",
    "CitationDocument",
    "ServerResult",
    "citation_of",
    "citation_source",
    "prompt_documents",
    "programmatic_input",
    "server_tool_result",
]

SERVER_TOOL_NAMES: dict[str, tuple[str, str | None]] = {
    "web_search": ("web_search", None),
    "web_fetch": ("web_fetch", None),
    "code_execution": ("code_execution", "programmatic-tool-call"),
    "bash_code_execution": ("code_execution", "bash_code_execution"),
    "text_editor_code_execution": ("code_execution", "text_editor_code_execution"),
}
"""`server_tool_use` name → (the tool's name, the `type` its input gets)."""

_RESULT_TOOLS = {
    "web_search_tool_result": "web_search",
    "web_fetch_tool_result": "web_fetch",
    "code_execution_tool_result": "code_execution",
    "bash_code_execution_tool_result": "code_execution",
    "text_editor_code_execution_tool_result": "code_execution",
}


@dataclass(frozen=True, slots=True)
class CitationDocument:
    """A document a citation may point at by `document_index` (a fetched page, here)."""

    title: str
    media_type: str
    filename: str | None = None


@dataclass
class ServerResult:
    """What one result block yields: its parts, a citable document, whether it held search results."""

    parts: list[ModelStreamPart] = field(default_factory=list[ModelStreamPart])
    document: CitationDocument | None = None
    web_results: bool = False


def server_tool_result(kind: str, block: dict[str, Any], new_id: Callable[[], str]) -> ServerResult | None:
    """The parts of a server tool's result block; None for a block this module does not map."""
    tool_name = _RESULT_TOOLS.get(kind)
    if tool_name is None:
        return None
    call_id = str(block.get("tool_use_id"))
    content = block.get("content")
    result = ServerResult()

    def emit(value: JsonValue, *, error: bool = False) -> None:
        flag: dict[str, Any] = {"is_error": True} if error else {}
        result.parts.append(V4ToolResult(tool_call_id=call_id, tool_name=tool_name, result=value, **flag))

    if kind in ("bash_code_execution_tool_result", "text_editor_code_execution_tool_result"):
        emit(cast(JsonValue, content))
        return result
    if kind == "web_search_tool_result":
        if not isinstance(content, list):
            emit(_error(content), error=True)
            return result
        results = [as_dict(item) for item in cast("list[Any]", content)]
        emit([_search_result(item) for item in results])
        for item in results:
            result.web_results = True
            title = {"title": item["title"]} if isinstance(item.get("title"), str) else {}
            result.parts.append(
                V4Source(
                    source_type="url",
                    id=new_id(),
                    url=str(item.get("url")),
                    **title,
                    provider_metadata={"anthropic": {"pageAge": item.get("page_age")}},
                )
            )
        return result
    body = as_dict(content)
    if kind == "web_fetch_tool_result":
        if body.get("type") == "web_fetch_result":
            document = as_dict(body.get("content"))
            source = as_dict(document.get("source"))
            title = document.get("title")
            title = title if isinstance(title, str) else str(body.get("url"))
            result.document = CitationDocument(title=title, media_type=str(source.get("media_type")))
            emit(_fetch_result(body, document, source))
        elif body.get("type") == "web_fetch_tool_result_error":
            emit(_error(body), error=True)
        return result
    match body.get("type"):  # code_execution_tool_result
        case "code_execution_result":
            emit(_code_result(body, "stdout"))
        case "encrypted_code_execution_result":
            emit(_code_result(body, "encrypted_stdout"))
        case "code_execution_tool_result_error":
            emit(_error(body), error=True)
        case _:
            pass
    return result


def _search_result(item: dict[str, Any]) -> JsonValue:
    title: dict[str, JsonValue] = {"title": item["title"]} if item.get("title") is not None else {}
    return {
        **pick(item, url="url"),
        **title,
        "pageAge": item.get("page_age"),
        **pick(item, encryptedContent="encrypted_content", type="type"),
    }


def _fetch_result(body: dict[str, Any], document: dict[str, Any], source: dict[str, Any]) -> JsonValue:
    content: dict[str, JsonValue] = {
        **pick(document, type="type", title="title", citations="citations"),
        "source": pick(source, type="type", mediaType="media_type", data="data"),
    }
    return {"type": "web_fetch_result", **pick(body, url="url", retrievedAt="retrieved_at"), "content": content}


def _code_result(body: dict[str, Any], stdout: str) -> JsonValue:
    return {
        **pick(body, type="type", **{stdout: stdout}, stderr="stderr", return_code="return_code"),
        "content": body.get("content") or [],
    }


def _error(content: Any) -> JsonValue:
    return pick(as_dict(content), type="type", errorCode="error_code")


def programmatic_input(text: str) -> str:
    """A code execution input `{code}` gets the `programmatic-tool-call` type the AI SDK gives it."""
    try:
        parsed = loads_strict(text)
    except ValueError:
        return text
    if isinstance(parsed, dict) and "code" in parsed and "type" not in parsed:
        return dumps({"type": "programmatic-tool-call", **cast("dict[str, Any]", parsed)})
    return text


# --- citations ------------------------------------------------------------------------------


def citation_of(citation: dict[str, Any], documents: list[CitationDocument]) -> Citation:
    """`mapAnthropicCitation`: the citation on text-end, its source id the URL or the document's."""
    cited = {"cited_text": citation["cited_text"]} if isinstance(citation.get("cited_text"), str) else {}
    kind = citation.get("type")
    if kind in ("web_search_result_location", "search_result_location"):
        url = citation.get("url") if kind == "web_search_result_location" else citation.get("source")
        source: dict[str, JsonValue] = {"type": "source", "sourceType": "url", "id": url, "url": url}
        if isinstance(citation.get("title"), str):
            source["title"] = citation["title"]
        source["providerMetadata"] = {"anthropic": citation}
        return Citation(source=source, **cited)
    index = citation.get("document_index")
    document = _document(documents, index)
    file_id = citation.get("file_id")
    title = citation.get("document_title")
    source = {
        "type": "source",
        "sourceType": "document",
        "id": file_id if isinstance(file_id, str) else str(index),
        "mediaType": document.media_type if document is not None else "text/plain",
        "title": title if isinstance(title, str) else (document.title if document is not None else f"Document {index}"),
    }
    if document is not None and document.filename is not None:
        source["filename"] = document.filename
    source["providerMetadata"] = {"anthropic": citation}
    return Citation(source=source, **cited)


def citation_source(
    citation: dict[str, Any], documents: list[CitationDocument], new_id: Callable[[], str]
) -> V4Source | None:
    """`createCitationSource`: a url source for a web citation, a document source for a known document."""
    if citation.get("type") == "web_search_result_location":
        title = {"title": citation["title"]} if isinstance(citation.get("title"), str) else {}
        return V4Source(
            source_type="url",
            id=new_id(),
            url=str(citation.get("url")),
            **title,
            provider_metadata={
                "anthropic": {
                    "citedText": citation.get("cited_text"),
                    "encryptedIndex": citation.get("encrypted_index"),
                }
            },
        )
    kind = citation.get("type")
    document = _document(documents, citation.get("document_index"))
    if kind not in ("page_location", "char_location") or document is None:
        return None
    pages = kind == "page_location"
    span = ("startPageNumber", "endPageNumber") if pages else ("startCharIndex", "endCharIndex")
    wire = ("start_page_number", "end_page_number") if pages else ("start_char_index", "end_char_index")
    title = citation.get("document_title")
    return V4Source(
        source_type="document",
        id=new_id(),
        media_type=document.media_type,
        title=title if isinstance(title, str) else document.title,
        filename=document.filename,
        provider_metadata={
            "anthropic": {
                "citedText": citation.get("cited_text"),
                span[0]: citation.get(wire[0]),
                span[1]: citation.get(wire[1]),
            }
        },
    )


def prompt_documents(prompt: list[ModelMessage]) -> list[CitationDocument]:
    """The user files a citation may point at (PDF or plain text with citations on), in order."""
    documents: list[CitationDocument] = []
    for message in prompt:
        if not isinstance(message, UserModelMessage):
            continue
        for part in message.content:
            if not isinstance(part, ModelFilePart) or part.media_type not in ("application/pdf", "text/plain"):
                continue
            citations = as_dict(as_dict((part.provider_options or {}).get("anthropic")).get("citations"))
            if citations.get("enabled") is True:
                title = part.filename or "Untitled Document"
                documents.append(CitationDocument(title=title, media_type=part.media_type, filename=part.filename))
    return documents


def _document(documents: list[CitationDocument], index: Any) -> CitationDocument | None:
    return documents[index] if isinstance(index, int) and 0 <= index < len(documents) else None
