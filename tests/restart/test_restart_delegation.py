"""Sub-agents three levels deep across kill -9 of `stepline dev` (a real process over a data folder).

The lead (`tests.restart.delegation_agents`) calls alpha, beta and gamma at once, gamma calls delta;
four approvals wait over levels 1-3 (alpha's, beta's, delta's stamp, then the lead's own). The
server is killed with SIGKILL three times: while alpha streams its slow first step, while beta's
and delta's approvals wait (alpha's decided through the webhook just before), and right after
beta's decision through its signed link (printed by a server before one restart or two). After
the last start the real ai@7 `Chat`, holding what a reloaded page holds once it has replayed the
run's log (the stored waiting message lacks the raised requests: they are in the log only), decides
delta's approval and then the lead's with `addToolApprovalResponse` and its automatic continuation.

Then: each stamp ran once (the journal; beta's may have started before the kill that follows its
decision, and is then reported interrupted and never run again), every run completed, the message
the client ended with is the stored one and the one the whole log reduces to (by ai@7), and
resuming after each event id of that log gives exactly the rest of it.
"""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from stepline.runtime.child_results import child_run_id
from tests.restart.delegation_agents import LABELS, SLOW_TEXT
from tests.restart.process import DevProcess, Follower, journal_lines, poll, start_dev
from tests.support.node_script import run_node_script
from tests.support.sdk_oracle import SdkOracle

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]  # 20-80 s: four starts of a real server

CHAT = "deep-kill"
AGENTS = {"STEPLINE_AGENT": "tests.restart.delegation_agents:AGENTS"}
LINK = re.compile(r"decide: curl -X POST \S+/api/approval-links/(\S+) -H '[^']*' -d '([^']*)'")
Frames = list[tuple[str | None, str]]


def get(client: httpx.Client, path: str) -> dict[str, Any]:
    response = client.get(path)
    assert response.status_code == 200, response.text
    return response.json()


def run_of(client: httpx.Client, run_id: str) -> dict[str, Any]:
    return get(client, f"/api/runs/{run_id}")


def pending(client: httpx.Client, run_id: str) -> list[str]:
    """The approvals `run_id` waits for (none while the run has not started: 404)."""
    response = client.get(f"/api/runs/{run_id}")
    if response.status_code == 404:
        return []
    assert response.status_code == 200, response.text
    return [a["approvalId"] for a in response.json()["pendingApprovals"]]


def waiting_on(client: httpx.Client, run_id: str) -> str:
    """The one approval `run_id` waits for, once it waits."""
    found = poll(lambda: pending(client, run_id), f"{run_id} waits for its approval", timeout=60)
    assert len(found) == 1, found
    return found[0]


def completed(client: httpx.Client, run_id: str) -> None:
    poll(lambda: run_of(client, run_id)["status"] == "completed", f"{run_id} completed", timeout=60)


def caught_up(sdk: SdkOracle, replay: Follower, approval_id: str) -> dict[str, Any] | None:
    """The replay read so far, reduced by the SDK, once `approval_id` is the only request it shows waiting
    (the requests decided before are settled further on in the log than the one raised last)."""
    held: dict[str, Any] | None = sdk.call("sseToMessage", body=sse(replay.frames))["final"]
    if held is None:  # nothing read yet
        return None
    asked = [p["approval"]["id"] for p in held["parts"] if p.get("state") == "approval-requested"]
    return held if asked == [approval_id] else None


def printed_links(*servers: DevProcess) -> dict[str, str]:
    """Approval id -> token, from the `decide: curl ...` lines the servers printed (a person's copy)."""
    found: dict[str, str] = {}
    for server in servers:
        for approval_id, body in LINK.findall(server.banner()):
            found[approval_id] = json.loads(body)["token"]
    return found


def follow_active(client: httpx.Client, chat: str) -> Follower:
    """The resume stream of `chat` once it has an active run (204 before that)."""

    def opened() -> Follower | None:
        follower = Follower().follow(client, "GET", f"/api/chat/{chat}/stream")
        assert follower.answered.wait(30), follower.error
        return follower if follower.status == 200 else None

    return poll(opened, f"{chat} has an active run")


def killed(dev: DevProcess, *cut: Follower) -> None:
    assert dev.stop(signal.SIGKILL) == -signal.SIGKILL
    assert all(f.ended.wait(10) for f in cut)


def sse(frames: Frames) -> str:
    return "".join((f"id: {i}\n" if i else "") + f"data: {d}\n\n" for i, d in frames)


def resumed_after(client: httpx.Client, position: str) -> Frames | None:
    """The frames after `position` of the ended run's log; None for a 204 (nothing after it)."""
    follower = Follower().follow(client, "GET", f"/api/chat/{CHAT}/stream", headers={"last-event-id": position})
    assert follower.ended.wait(30) and follower.error is None, follower.error
    assert follower.status in (200, 204), follower.status
    return follower.frames if follower.status == 200 else None


def test_sub_agents_three_levels_deep_survive_kill_9_at_three_points(tmp_path: Path, sdk: SdkOracle) -> None:
    journal = tmp_path / "tools.journal"
    servers: list[DevProcess] = []

    def start() -> DevProcess:
        servers.append(start_dev(tmp_path / "data", tmp_path, journal=journal, model="scripted", extra_env=AGENTS))
        return servers[-1]

    def on(dev: DevProcess, body: Callable[[httpx.Client], None]) -> None:
        try:
            with dev.client(timeout=httpx.Timeout(30, read=None)) as client:
                body(client)
        finally:
            if dev.process.poll() is None:  # the last server, or one a failed check left running
                dev.stop(signal.SIGTERM)

    runs: dict[str, str] = {}
    first_frame: Frames = []

    def mid_child_stream(client: httpx.Client) -> None:
        user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "stamp all four"}]}
        parent = Follower().follow(
            client, "POST", "/api/chat", json={"id": CHAT, "messages": [user], "trigger": "submit-message"}
        )
        parent.wait_for('"start"')
        first_frame.append(parent.frames[0])
        runs["lead"] = json.loads(parent.frames[0][1])["messageMetadata"]["runId"]
        runs.update({name: child_run_id(runs["lead"], f"c-{name}") for name in ("alpha", "beta", "gamma")})
        runs["delta"] = child_run_id(runs["gamma"], "g1")
        alpha = follow_active(client, runs["alpha"])
        # alpha's slow first step is streaming (under load the log merges deltas: a word, not a whole delta)
        alpha.wait_for(SLOW_TEXT[3])
        killed(servers[-1], parent, alpha)
        assert alpha.frames[-1][1] != "[DONE]" and SLOW_TEXT[-1] not in alpha.chunks_text()

    on(start(), mid_child_stream)
    assert journal_lines(journal) == []

    def two_approvals_wait(client: httpx.Client) -> None:
        alpha_approval = waiting_on(client, runs["alpha"])  # alpha's step was redone, up to its approval
        for name in ("beta", "delta"):
            waiting_on(client, runs[name])
        decided = client.post(f"/api/approvals/{alpha_approval}", json={"approved": True, "reason": "webhook"})
        assert decided.status_code == 200, decided.text
        completed(client, runs["alpha"])
        assert [len(pending(client, runs[name])) for name in ("beta", "delta")] == [1, 1]
        killed(servers[-1])

    on(start(), two_approvals_wait)
    assert [line.split()[-1] for line in journal_lines(journal)] == ["alpha"]

    link_decision: dict[str, Any] = {}

    def right_after_a_decision(client: httpx.Client) -> None:
        beta_approval = waiting_on(client, runs["beta"])
        token = printed_links(*servers[:-1])[beta_approval]  # printed by a server since killed
        decided = client.post(f"/api/approval-links/{beta_approval}", json={"approved": True, "token": token})
        assert decided.status_code == 200, decided.text
        assert decided.json()["decidedBy"] == "link"
        link_decision.update(path=f"/api/approval-links/{beta_approval}", token=token, body=decided.content)
        killed(servers[-1])

    on(start(), right_after_a_decision)

    report: dict[str, Any] = {}

    def through_the_sdk(client: httpx.Client) -> None:
        completed(client, runs["beta"])
        again = client.post(link_decision["path"], json={"approved": True, "token": link_decision["token"]})
        assert (again.status_code, again.content) == (200, link_decision["body"]), "a replay: byte-identical"
        delta_approval = waiting_on(client, runs["delta"])
        # A page reloaded now holds the stored messages and reduces the replay of the active run's log
        # (it holds the resume stream while the run waits: read it until delta's is the one request it
        # shows waiting; the frames up to delta's raised request alone still show alpha's and beta's).
        replay = follow_active(client, CHAT)
        held = poll(lambda: caught_up(sdk, replay, delta_approval), "the replay shows delta's request alone")
        stored = get(client, f"/api/conversations/{CHAT}")["messages"]
        assert held["id"] == stored[-1]["id"]
        scenario = {
            "base": servers[-1].url,
            "chatId": CHAT,
            "messages": [*stored[:-1], held],
            "sendAutomaticallyWhen": "approvals",
            "steps": [{"approve": True, "reason": "sdk"}, {"approve": True, "reason": "sdk, the lead's own"}],
        }
        report.update(run_node_script("chat_e2e.mjs", scenario))
        assert [s.get("failed") for s in report["steps"]] == [None, None], report["steps"]
        completed(client, runs["lead"])
        check_the_end(client)

    def check_the_end(client: httpx.Client) -> None:
        for name, run_id in runs.items():
            assert run_of(client, run_id)["status"] == "completed", name
        stored = get(client, f"/api/conversations/{CHAT}")["messages"][-1]
        answer = report["messages"][-1]
        assert answer == {k: stored[k] for k in answer}, "the client ends with the stored message"
        assert answer["parts"][-1] == {"type": "text", "text": "All four are stamped.", "state": "done"}
        raised = [p for p in answer["parts"] if p["type"] == "dynamic-tool"]
        assert sorted((p["input"]["label"], p["state"]) for p in raised) == [
            (label, "output-available") for label in ("alpha", "beta", "delta")
        ], "each child's approval raised into the message once, settled"
        assert "retries" not in stored["metadata"], "the lead's steps redid nothing"
        alpha = get(client, f"/api/conversations/{runs['alpha']}")["messages"][-1]
        texts = [p["text"] for p in alpha["parts"] if p["type"] == "text"]
        assert texts == ["".join(SLOW_TEXT), "alpha stamped."], "the cut step redone whole, once"
        whole = [*first_frame, *(resumed_after(client, str(first_frame[0][0])) or [])]
        assert whole[-1] == (None, "[DONE]")
        reduced = sdk.call("sseToMessage", body=sse(whole))["final"]
        assert reduced["parts"] == stored["parts"], "the whole log reduces to the stored message"
        positions = [i for i, _ in whole if i is not None]
        assert len(positions) == len(set(positions)), "each event once"
        assert whole[-2][0] == positions[-1] and json.loads(whole[-2][1])["type"] == "finish"
        for index, position in enumerate(positions[:-1]):
            assert resumed_after(client, position) == whole[index + 1 :], f"resume after {position}"
        assert resumed_after(client, positions[-1]) is None, "after the finish nothing is left: 204"
        beta = get(client, f"/api/conversations/{runs['beta']}")["messages"][-1]
        report["betaStamp"] = [(p["state"], p.get("errorText")) for p in beta["parts"] if p["type"] == "tool-stamp"]

    on(start(), through_the_sdk)
    labels = [line.split()[-1] for line in journal_lines(journal)]
    assert len(labels) == len(set(labels)), f"a stamp ran twice: {labels}"
    if "beta" in labels:
        assert sorted(labels) == sorted(LABELS)
        assert [state for state, _ in report["betaStamp"]] == ["output-available"]
    else:  # the kill right after beta's decision came once its stamp had started: reported, never run again
        assert sorted(labels) == sorted(set(LABELS) - {"beta"}), labels
        [(state, error)] = report["betaStamp"]
        assert state == "output-error" and "interrupted" in str(error), report["betaStamp"]
