"""A run seeded with a secret of every kind the redactor knows, then every store scanned for them.

The dev server (the API, the local backend on moto, the real ASL) runs a scripted model whose
stream splits each secret across two deltas; the user's message, the tool input (by shape and
under a sensitive key), the approval's reason and the answer carry the others. Then the secrets
are looked for in the DynamoDB tables, the S3 bucket, the event log, the SSE the client read, the
captured logs and the Step Functions execution history. The one place kept in clear is the
loop checkpoint (its items and the blobs they point to): docs/data-model.md says why, and this
test checks that it really is the only one.
"""

from __future__ import annotations

import json
import logging
import re
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest

from stepline.api.identity import DEFAULT_LOCAL_USER
from stepline.context.offload import OUTPUTS_KIND
from stepline.local.backend import BUCKET, REGION
from stepline.store.blobs import blob_key
from tests.support.server import Running, config, running, write_book

USER_KEY = "AKIAUSERUSERUSERUSER"  # an AWS access key id, in the user's message
TEXT_KEY = "sk-ant-api03-TEXTtextTEXTtext1234"  # an Anthropic key, split across two text deltas
PATH_KEY = "sk-proj-PATHpathPATHpath5678"  # an OpenAI key inside a tool input string, split
PASSWORD = "hunter2-horse-battery"  # only a sensitive key says it is one, split
REASON_KEY = "AKIAREASONREASON1234"  # in the approval's reason
BEARER = "abcdefgh12345678ijkl"  # a bearer token in the answer, split after "Bearer abcd"
SECRETS = {
    "user": USER_KEY,
    "text": TEXT_KEY,
    "path": PATH_KEY,
    "password": PASSWORD,
    "reason": REASON_KEY,
    "bearer": BEARER,
}
PADDING = "p" * 70_000  # the tool's input and output go to S3 (above the 64 KiB offload threshold)
INPUT = json.dumps({"path": f"/keys/{PATH_KEY}/{PADDING}", "password": PASSWORD})
FINISH = {"inputTokens": {"total": 5}, "outputTokens": {"total": 5}}


def _cuts(text: str, *inside: str) -> list[str]:
    """`text` cut in the middle of each of `inside`, in order."""
    points = [text.index(part) + len(part) // 2 for part in inside]
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


def _book() -> dict[str, Any]:
    first_text = f"Rotating {TEXT_KEY} now."
    step_one = [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t1"},
        *({"type": "text-delta", "id": "t1", "delta": piece} for piece in _cuts(first_text, TEXT_KEY)),
        {"type": "text-end", "id": "t1"},
        {"type": "tool-input-start", "id": "call-1", "toolName": "delete_file"},
        # the sensitive key itself is split too: '"pass' + 'word"'
        *(
            {"type": "tool-input-delta", "id": "call-1", "delta": piece}
            for piece in _cuts(INPUT, PATH_KEY, '"password"', PASSWORD)
        ),
        {"type": "tool-input-end", "id": "call-1"},
        {"type": "tool-call", "toolCallId": "call-1", "toolName": "delete_file", "input": INPUT},
        {"type": "finish", "finishReason": {"unified": "tool-calls", "raw": "tool_use"}, "usage": FINISH},
    ]
    answer = f"Done; Bearer {BEARER} is revoked."
    step_two = [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t2"},
        *({"type": "text-delta", "id": "t2", "delta": piece} for piece in _cuts(answer, BEARER)),
        {"type": "text-end", "id": "t2"},
        {"type": "finish", "finishReason": {"unified": "stop", "raw": "stop"}, "usage": FINISH},
    ]
    return {"name": "secrets", "match": ["rotate"], "steps": [{"parts": step_one}, {"parts": step_two}]}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Running]:
    spec = write_book(tmp_path / "book.json", [_book()])
    with running(config(spec, STEPLINE_TOOLS="stepline.tools.demo"), engine="moto") as live:  # its history
        yield live


def _wait_idle(client: httpx.Client, chat_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        conversation = client.get(f"/api/conversations/{chat_id}").json()
        if conversation["status"] in ("idle", "failed") and conversation["activeRunId"] is None:
            return conversation
        assert time.monotonic() < deadline, conversation["status"]
        time.sleep(0.05)


def _dynamo(server: Running) -> tuple[str, str]:
    """(everything but the checkpoints, the checkpoint items) of every table, as JSON text."""
    dynamodb: Any = server.server.backend.dynamodb
    kept: list[str] = []
    checkpoints: list[str] = []
    for table in dynamodb.list_tables()["TableNames"]:
        for page in dynamodb.get_paginator("scan").paginate(TableName=table):
            for item in page["Items"]:
                checkpoint = item.get("sk", {}).get("S", "").startswith("K#")
                (checkpoints if checkpoint else kept).append(json.dumps(item, default=_stored_text))
    return "\n".join(kept), "\n".join(checkpoints)


def _stored_text(value: object) -> str:
    """A binary attribute as text: the only one is a record's JSON, zlib-compressed from 800 bytes (`dataz`).

    Strict: a binary attribute of another kind fails here instead of being searched as garbled bytes.
    """
    assert isinstance(value, bytes), value
    return zlib.decompress(value).decode()


def _s3(checkpoint_items: str) -> tuple[str, str, int]:
    """(every object but the checkpoints' blobs and offloaded outputs, those, the number of objects).

    A checkpoint's blobs: the ones its items point to by key, and its step pages, which the checkpoint
    (its item or its blob) names by digest in `stepPages`.
    """
    s3: Any = boto3.client("s3", region_name=REGION)  # pyright: ignore[reportUnknownMemberType]
    pointed = set(re.findall(r"users/[A-Za-z0-9_./\-]+", checkpoint_items.replace("\\", "")))
    bodies: dict[str, str] = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        for entry in page.get("Contents", []):
            bodies[entry["Key"]] = s3.get_object(Bucket=BUCKET, Key=entry["Key"])["Body"].read().decode()
    checkpoint_text = checkpoint_items.replace("\\", "") + "".join(bodies.get(key, "") for key in pointed)
    for refs in re.findall(r'"stepPages":\s*\[[^\]]*\]', checkpoint_text):
        pointed |= {blob_key(DEFAULT_LOCAL_USER, digest) for digest in re.findall(r"[0-9a-f]{64}", refs)}
    kept: list[str] = []
    clear: list[str] = []
    outputs = blob_key(DEFAULT_LOCAL_USER, "0" * 64, kind=OUTPUTS_KIND)[:-64]
    for key, body in bodies.items():
        in_clear = key in pointed or key.startswith(outputs)  # the checkpoint, and the outputs its prompt offloaded
        (clear if in_clear else kept).append(f"{key}\n{body}")
    return "\n".join(kept), "\n".join(clear), len(bodies)


def _found(text: str) -> list[str]:
    return [name for name, secret in SECRETS.items() if secret in text or secret[len(secret) // 2 :] in text]


def test_no_secret_reaches_any_store_the_stream_the_logs_or_the_history(
    server: Running, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="stepline")
    chat = "secret-chat"
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": f"rotate {USER_KEY} please"}]}
    with server.client() as client:
        first = client.post("/api/chat", json={"id": chat, "messages": [message], "trigger": "submit-message"})
        assert first.status_code == 200
        (request,) = [
            json.loads(line[6:])
            for line in first.text.splitlines()
            if line.startswith("data: {") and '"tool-approval-request"' in line
        ]
        decided = client.post(
            f"/api/approvals/{request['approvalId']}", json={"approved": True, "reason": f"ok, {REASON_KEY}"}
        )
        assert decided.status_code == 200, decided.text
        resumed = client.get(f"/api/chat/{chat}/stream")
        conversation = _wait_idle(client, chat)
    assistant = conversation["messages"][-1]
    run_id = assistant["runId"]
    texts = [p["text"] for p in assistant["parts"] if p["type"] == "text"]
    assert texts == ["Rotating ***** now.", "Done; Bearer ***** is revoked."]
    tool = next(p for p in assistant["parts"] if p.get("toolCallId") == "call-1")
    assert tool["state"] == "output-available" and tool["input"]["password"] == "*****"

    store = server.server.backend.services.store
    events = json.dumps([e.model_dump() for e in store.events_after(DEFAULT_LOCAL_USER, run_id, 0, now=0)])
    tables, checkpoints = _dynamo(server)
    objects, checkpoint_blobs, count = _s3(checkpoints)
    history = json.dumps(server.server.backend.workflow.history(run_id), default=str)
    logs = caplog.text + json.dumps([str(r.args) for r in caplog.records])
    places = {
        "DynamoDB": tables,
        "S3": objects,
        "event log": events,
        "SSE": first.text + resumed.text,
        "API reads": json.dumps(conversation),
        "logs": logs,
        "execution history": history,
    }
    leaks = {place: _found(text) for place, text in places.items() if _found(text)}
    assert leaks == {}
    # the scan read real data: the masks are there, large values did go to S3, and the checkpoint
    # (kept in clear, docs/data-model.md) holds what the approved tool ran with
    assert "*****" in events and "*****" in tables and count >= 2 and "*****" in objects
    assert {"password", "path"} <= set(_found(checkpoints + checkpoint_blobs))
