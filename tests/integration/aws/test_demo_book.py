"""The demo book and the default toolset on the durable path: the real ASL on moto, one model step
per invocation, each with a fresh model (as each Lambda invocation has its own process)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from stepline.llm.base import ModelCallOptions
from stepline.llm.registry import DEMO_BOOK
from stepline.llm.script_book import ScriptBook
from stepline.llm.stream_parts import ModelStreamPart
from stepline.runtime.waits import answer, decide
from stepline.store.blobs import MemoryBlobStore
from stepline.tools.workspace import TOOL_APPROVAL, TOOLS
from tests.support.local_aws import local_aws
from tests.support.runs import USER, begin, final_message, wait_for_token


class FreshBookPerCall:
    """A model that loads the book anew for every call: nothing can carry over between steps."""

    provider = "scripted"
    model_id = "demo-book"

    def __init__(self) -> None:
        self.capabilities = ScriptBook.from_file(DEMO_BOOK).capabilities
        self.calls = 0

    def stream(self, options: ModelCallOptions) -> AsyncIterator[ModelStreamPart]:
        self.calls += 1
        return ScriptBook.from_file(DEMO_BOOK).stream(options)


def _parts_of(message: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [p for p in message["parts"] if p["type"] == kind]


def test_the_save_artifact_script_writes_after_approval_and_records_one_artifact() -> None:
    model = FreshBookPerCall()
    blobs = MemoryBlobStore()
    with local_aws(model, tools=TOOLS, tool_approval=TOOL_APPROVAL, blobs=blobs) as aws:
        run_id = begin(aws, "Save the note as an artifact")
        aws.wait_run(USER, run_id, lambda r: r.status == "waiting_approval")
        decide(aws.services, USER, wait_for_token(aws, "call-write"), approved=True, reason=None)
        assert aws.wait_execution(run_id) == "SUCCEEDED"
        run = aws.services.store.get_run(USER, run_id)
        note = blobs.get_object(f"users/{USER}/conversations/{run.conversation_id}/workspace/notes/hello.md")
        assert b"You asked: Save the note as an artifact" in note
        (artifact,) = aws.services.store.list_message_artifacts(USER, run.assistant_message_id)
        assert (artifact.run_id, artifact.conversation_id, artifact.name) == (run_id, run.conversation_id, "hello.md")
        message = final_message(aws, run_id)
        (saved,) = _parts_of(message, "tool-save_artifact")
        assert saved["state"] == "output-available"
        assert saved["output"]["url"] == f"/api/artifacts/{artifact.artifact_id}"
        assert message["status"] == "completed" and message["content"].startswith("Done — see the tool results above.")
        assert model.calls == 3


def test_the_ask_script_waits_for_the_answer_then_replies() -> None:
    with local_aws(FreshBookPerCall(), tools=TOOLS, tool_approval=TOOL_APPROVAL, blobs=MemoryBlobStore()) as aws:
        run_id = begin(aws, "Ask me a question")
        aws.wait_run(USER, run_id, lambda r: r.status == "waiting_user" and r.task_token is not None)
        answer(aws.services, USER, run_id, "call-ask", output="Meeting notes", error_text=None)
        assert aws.wait_execution(run_id) == "SUCCEEDED"
        message = final_message(aws, run_id)
        (asked,) = _parts_of(message, "tool-ask_user_question")
        assert (asked["state"], asked["output"]) == ("output-available", "Meeting notes")
        assert message["content"].startswith("Thanks — your answer is in the tool result above.")
