"""Unattended runs against `stepline dev` as a process: headless runs, idempotency, callbacks, hooks, approvals."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import shlex
import signal
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook

from tests.restart.process import DevProcess, Follower, poll
from tests.unattended.dev_process import HOOK_SECRET, SECRET, auth, receiver, start_dev


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevProcess]:
    work = tmp_path_factory.mktemp("unattended")
    process = start_dev(work / "data", work)
    try:
        yield process
    finally:
        process.stop(signal.SIGTERM)


def client(dev: DevProcess, user: str = "ops") -> httpx.Client:
    return httpx.Client(base_url=dev.url, headers=auth(user), timeout=30)


def ended(c: httpx.Client, run_id: str) -> dict[str, Any]:
    def view() -> dict[str, Any] | None:
        found = c.get(f"/api/runs/{run_id}").json()
        return found if found["status"] in ("completed", "failed", "aborted") else None

    return poll(view, f"run {run_id} to end")


def test_a_headless_run_is_polled_to_its_end_and_streamed(dev: DevProcess) -> None:
    with client(dev) as c:
        started = c.post("/api/runs", json={"agent": "reports", "input": "Write it.", "metadata": {"job": 7}})
        assert started.status_code == 202, started.text
        run_id, conversation_id = started.json()["runId"], started.json()["conversationId"]
        stream = Follower().follow(c, "GET", f"/api/chat/{conversation_id}/stream", headers={"last-event-id": "0"})
        view = ended(c, run_id)
        stream.ended.wait(30)
    assert view["status"] == "completed" and view["trigger"] == "api" and view["metadata"] == {"job": 7}
    assert [p["text"] for p in view["message"]["parts"] if p["type"] == "text"] == ["Report written."]
    chunks = [json.loads(d) for _, d in stream.frames if d != "[DONE]"]
    assert chunks[0]["type"] == "start" and chunks[-1]["type"] == "finish"
    assert "Report written." in "".join(c.get("delta", "") for c in chunks)


def test_the_same_idempotency_key_twice_is_one_run(dev: DevProcess) -> None:
    key = f"job-{uuid.uuid4().hex}"
    body = {"agent": "reports", "input": "Nightly numbers."}
    answers: list[httpx.Response] = []

    def post() -> None:
        with client(dev) as c:
            answers.append(c.post("/api/runs", json=body, headers={"idempotency-key": key}))

    threads = [threading.Thread(target=post) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with client(dev) as c:
        again = c.post("/api/runs", json=body, headers={"idempotency-key": key})
        other = c.post("/api/runs", json={**body, "input": "Other numbers."}, headers={"idempotency-key": key})
        with client(dev, "eve") as eve:
            elsewhere = eve.post("/api/runs", json=body, headers={"idempotency-key": key})
        listed = c.get("/api/conversations", params={"limit": 100}).json()["conversations"]
    runs = {a.json()["runId"] for a in [*answers, again]}
    assert [a.status_code for a in answers] == [202, 202, 202] and len(runs) == 1
    assert again.headers["idempotent-replayed"] == "true"
    conversation = again.json()["conversationId"]
    assert [c["id"] for c in listed].count(conversation) == 1
    assert other.status_code == 422 and "different request" in other.json()["error"]["message"]
    assert elsewhere.status_code == 202 and elsewhere.json()["runId"] not in runs  # keys are per user


def test_a_callback_is_signed_retried_after_a_500_and_recorded(dev: DevProcess) -> None:
    with receiver([500]) as hook, client(dev) as c:
        started = c.post("/api/runs", json={"agent": "reports", "input": "Go.", "callbackUrl": hook.url}).json()
        ended(c, started["runId"])
        view = poll(lambda: _delivered(c, started["runId"]), "the callback delivered")
    first, second = hook.received
    assert first.body == second.body and first.headers["webhook-id"] == second.headers["webhook-id"]
    notice = Webhook(SECRET).verify(second.body, second.headers)
    assert notice["type"] == "run.completed" and notice["data"]["runId"] == started["runId"]
    assert notice["data"]["status"] == "completed"
    with pytest.raises(Exception, match="signature"):
        Webhook(SECRET).verify(second.body.replace(b"completed", b"failed"), second.headers)
    (delivery,) = view["callback"]["deliveries"]
    assert [a["status"] for a in delivery["attempts"]] == [500, 200] and delivery["state"] == "delivered"
    assert delivery["attempts"][0]["at"] < delivery["attempts"][1]["at"]


def _delivered(c: httpx.Client, run_id: str) -> dict[str, Any] | None:
    view = c.get(f"/api/runs/{run_id}").json()
    deliveries = view["callback"]["deliveries"]
    return view if deliveries and deliveries[0]["state"] == "delivered" else None


def test_a_hanging_receiver_never_holds_the_run(dev: DevProcess) -> None:
    with receiver(hold=True) as hook, client(dev) as c:
        started = c.post("/api/runs", json={"agent": "reports", "input": "Go.", "callbackUrl": hook.url}).json()
        assert hook.entered.wait(30)  # the receiver holds the notice of the run's end...
        view = ended(c, started["runId"])  # ...and the run has ended all the same
        assert not hook.release.is_set() and view["status"] == "completed"
        hook.release.set()


def test_a_private_or_plain_http_callback_is_refused(dev: DevProcess) -> None:
    with client(dev) as c:
        for url in ("https://10.1.2.3/hook", "https://169.254.169.254/latest", "http://example.com/hook", "ftp://x/y"):
            answer = c.post("/api/runs", json={"input": "Go.", "callbackUrl": url})
            assert answer.status_code == 400 and "callbackUrl" in answer.json()["error"]["message"], url


def _signed(payload: dict[str, Any], *, secret: str = HOOK_SECRET, at: dt.datetime | None = None) -> dict[str, Any]:
    body = json.dumps(payload)
    msg_id = f"msg_{uuid.uuid4().hex}"
    when = at or dt.datetime.now(tz=dt.UTC)
    headers = {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(when.timestamp())),
        "webhook-signature": Webhook(secret).sign(msg_id, when, body),
        "content-type": "application/json",
    }
    return {"content": body, "headers": headers}


def _titles(dev: DevProcess) -> list[str]:
    with client(dev) as c:
        return [x["title"] for x in c.get("/api/conversations", params={"limit": 100}).json()["conversations"]]


def test_a_signed_webhook_starts_a_run_and_a_forged_or_replayed_one_is_refused(dev: DevProcess) -> None:
    delivery = _signed({"id": 42, "title": "Printer on fire"})
    with httpx.Client(base_url=dev.url, timeout=30) as anonymous:
        accepted = anonymous.post("/api/hooks/reports/ticket", **delivery)
        replayed = anonymous.post("/api/hooks/reports/ticket", **delivery)
        before = _titles(dev)
        forged = anonymous.post("/api/hooks/reports/ticket", **_signed({"id": 43, "title": "x"}, secret=SECRET))
        tampered = {**delivery, "content": delivery["content"].replace("42", "44")}
        stale = _signed({"id": 45, "title": "old"}, at=dt.datetime.now(tz=dt.UTC) - dt.timedelta(minutes=10))
        answers = [forged, anonymous.post("/api/hooks/reports/ticket", **tampered)]
        answers.append(anonymous.post("/api/hooks/reports/ticket", **stale))
        ignored = anonymous.post("/api/hooks/reports/ticket", **_signed({"ignore": True}))
    assert accepted.status_code == 202, accepted.text
    assert replayed.status_code == 401 and "replay" in replayed.json()["error"]["message"]
    assert [a.status_code for a in answers] == [401, 401, 401]
    assert ignored.status_code == 200 and ignored.json()["runId"] is None
    assert _titles(dev) == before  # nothing stored for the refused ones
    with client(dev) as c:
        view = ended(c, accepted.json()["runId"])
        conversation = c.get(f"/api/conversations/{view['conversationId']}").json()
    assert view["trigger"] == "hook" and view["metadata"]["hook"] == "ticket"
    assert conversation["messages"][0]["parts"][0]["text"] == "Triage ticket 42: Printer on fire"


def test_an_unattended_run_waits_for_approval_decided_through_the_printed_link(dev: DevProcess, tmp_path: Path) -> None:
    with client(dev) as c:
        started = c.post("/api/runs", json={"agent": "reports", "input": "Please refund the order."}).json()
        run_id = started["runId"]
        line = poll(lambda: _decision_line(dev, run_id), "the approval's line in the server log")
        waiting = c.get(f"/api/runs/{run_id}").json()
        command = shlex.split(line.split("decide: ", 1)[1])
        decided = subprocess.run(command, capture_output=True, text=True, timeout=30, check=True)
        view = ended(c, run_id)
        events = c.get("/api/dev/events").json()["events"]
        with client(dev, "eve") as eve:
            others = eve.get("/api/dev/events").json()["events"]
    assert waiting["status"] == "waiting_approval" and waiting["pendingApprovals"][0]["toolName"] == "refund"
    assert json.loads(decided.stdout)["decision"] == "approved"
    assert view["status"] == "completed" and view["pendingApprovals"] == []
    assert "Refunded." in json.dumps(view["message"]["parts"])
    mine = [e["detailType"] for e in events if e["detail"]["runId"] == run_id]
    assert mine == ["Approval Requested", "Run Completed"]
    assert all(e["detail"]["userId"] == "eve" for e in others)


def test_the_waiting_callback_carries_the_link_that_decides_the_approval(dev: DevProcess) -> None:
    with receiver() as hook, client(dev) as c:
        body = {"agent": "reports", "input": "Please refund the order.", "callbackUrl": hook.url}
        run_id = c.post("/api/runs", json=body).json()["runId"]
        poll(lambda: len(hook.received) >= 1 or None, "the waiting callback")
        waiting = Webhook(SECRET).verify(hook.received[0].body, hook.received[0].headers)
        decision = waiting["data"]["decision"]
        with httpx.Client(base_url=dev.url, timeout=30) as anonymous:  # the link is the permission
            decided = anonymous.post(decision["path"], json={"approved": True, "token": decision["token"]})
            again = anonymous.post(decision["path"], json={"approved": False, "token": decision["token"]})
        view = ended(c, run_id)
        poll(lambda: len(hook.received) >= 2 or None, "the end's callback")
    assert waiting["type"] == "run.waiting.approval" and waiting["data"]["toolName"] == "refund"
    assert decided.status_code == 200 and decided.json()["decision"] == "approved"
    assert again.status_code == 409  # decided once: the second answer changes nothing
    assert view["status"] == "completed" and "Refunded." in json.dumps(view["message"]["parts"])
    notices = [Webhook(SECRET).verify(r.body, r.headers)["type"] for r in hook.received]
    assert notices == ["run.waiting.approval", "run.completed"]


def _decision_line(dev: DevProcess, run_id: str) -> str | None:
    return next((x for x in dev.banner().splitlines() if run_id in x and "decide: curl" in x), None)


RATE = 2


def _tick_runs(dev: DevProcess) -> list[dict[str, Any]]:
    """Every run of the `tick` schedule (as GET /api/runs/{id} answers), by scheduled time."""
    runs: list[dict[str, Any]] = []
    with client(dev) as c:
        for summary in c.get("/api/conversations", params={"limit": 100}).json()["conversations"]:
            if summary["title"].startswith("tick"):
                detail = c.get(f"/api/conversations/{summary['id']}").json()
                run_id = next(m["runId"] for m in detail["messages"] if m["role"] == "assistant")
                runs.append(c.get(f"/api/runs/{run_id}").json())
    return sorted(runs, key=lambda r: r["metadata"]["scheduledAt"])


def _stamp(seconds: int) -> str:
    return dt.datetime.fromtimestamp(seconds, tz=dt.UTC).isoformat().replace("+00:00", "Z")


def test_a_schedule_fires_once_per_occurrence_and_runs_a_missed_one_once_after_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    dev = start_dev(data, tmp_path, STEPLINE_TEST_RATE_SECONDS=str(RATE))
    try:
        poll(lambda: len(_tick_runs(dev)) >= 2, "two tick runs")
        with client(dev) as c:
            nightly = {"scheduledAt": "2031-01-15T01:00:00Z"}  # 02:00 in Paris, in winter
            first = c.post("/api/dev/schedules/reports/nightly/runs", json=nightly)
            twice = c.post("/api/dev/schedules/reports/nightly/runs", json=nightly)
            off = c.post("/api/dev/schedules/reports/nightly/runs", json={"scheduledAt": "2031-01-15T02:00:00Z"})
            with client(dev, "eve") as eve:
                stranger = eve.post("/api/dev/schedules/reports/nightly/runs", json=nightly)
    finally:
        dev.stop(signal.SIGTERM)
    assert first.status_code == twice.status_code == 202 and first.json() == twice.json()
    assert twice.headers["idempotent-replayed"] == "true"
    assert off.status_code == 400 and stranger.status_code == 404
    last_seen = json.loads((data / "schedules.json").read_text())["ops:reports/tick"] / 1000
    gone = [last_seen + k * RATE for k in range(1, 4)]
    poll(lambda: dt.datetime.now(tz=dt.UTC).timestamp() > gone[-1] + 1, "three occurrences while it is down")
    again = start_dev(data, tmp_path, STEPLINE_TEST_RATE_SECONDS=str(RATE))
    try:
        poll(lambda: any(r["startedAt"] / 1000 > gone[-1] for r in _tick_runs(again)), "a tick after the restart")
        runs = _tick_runs(again)
    finally:
        again.stop(signal.SIGTERM)
    times = [r["metadata"]["scheduledAt"] for r in runs]
    assert len(times) == len(set(times))  # one run per occurrence
    before = [r for r in runs if r["metadata"]["scheduledAt"] <= _stamp(int(last_seen))]
    after = runs[len(before) :]
    once = after[0]  # the first run after the gap stands for every occurrence the gap held
    assert once["metadata"]["missedOccurrences"] >= 3  # (last_seen, last_seen + 7 s] holds three at least
    # Each run stands for the occurrences since the one before it: none lost, none counted twice.
    # (A scheduler that fell more than the grace behind on a busy machine coalesces too, as designed.)
    stamps = [dt.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() for t in times]
    stood_for = [r["metadata"].get("missedOccurrences", 1) for r in runs]
    assert stood_for[1:] == [round((b - a) / RATE) for a, b in itertools.pairwise(stamps)]
    assert all(r["status"] == "completed" for r in runs[:-1])
