from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from stepline.errors import InvalidUIMessageError
from stepline.protocol._ui_validation import validate_ui_messages
from stepline.protocol.parts import DataPart, ToolPart, UIMessage
from stepline.protocol.request import (
    ChatRequest,
    TurnPlan,
    chat_request_to_wire,
    is_continuation,
    message_to_wire,
    parse_chat_request,
    plan_turn,
)

Json = dict[str, Any]
TEXT: Json = {"type": "text", "text": "hi"}


def user(message_id: str = "u1", *parts: Json) -> Json:
    return {"id": message_id, "role": "user", "parts": list(parts) or [TEXT]}


def assistant(message_id: str = "a1", *parts: Json) -> Json:
    return {"id": message_id, "role": "assistant", "parts": list(parts)}


def tool(state: str, **fields: Any) -> Json:
    return {"type": "tool-deleteFile", "toolCallId": "call-1", "state": state, **fields}


def issues_of(value: object, **options: Any) -> list[tuple[str, str]]:
    with pytest.raises(InvalidUIMessageError) as error:
        validate_ui_messages(value, **options)
    return error.value.issues


def assert_issue(value: object, path: str, reason: str, **options: Any) -> None:
    issues = issues_of(value, **options)
    assert any(p == path and reason in r for p, r in issues), issues


# --- validate_ui_messages: every rejection path ----------------------------------------------


@pytest.mark.parametrize(
    ("value", "path", "reason"),
    [
        (None, "messages", "must be provided"),
        ({"id": "u1"}, "messages", "must be an array"),
        ([], "messages", "must not be empty"),
        (["hello"], "messages[0]", "must be an object"),
        ([{"role": "user", "parts": [TEXT]}], "messages[0].id", "required field is missing"),
        ([{"id": 7, "role": "user", "parts": [TEXT]}], "messages[0].id", "must be a string"),
        ([{"id": "t", "role": "tool", "parts": [TEXT]}], "messages[0].role", "Unsupported role (must be one of"),
        ([{"id": "u", "role": "user", "parts": []}], "messages[0].parts", "at least one part"),
        ([{"id": "a", "role": "assistant"}], "messages[0].parts", "required field is missing"),
        ([{"id": "a", "role": "assistant", "parts": {}}], "messages[0].parts", "must be an array"),
        ([user("u1", {"type": "image"})], "messages[0].parts[0]", "unknown UI message part type"),
        ([user("u1", {"text": "x"})], "messages[0].parts[0]", "unknown UI message part type"),
        ([{"id": "u1", "role": "user", "parts": ["x"]}], "messages[0].parts[0]", "unknown UI message part type"),
        ([user("u1", {"type": "text"})], "messages[0].parts[0].text", "required field is missing"),
        ([user("u1", {"type": "text", "text": 1})], "messages[0].parts[0].text", "must be a string"),
        ([user("u1", {"type": "text", "text": "x", "state": None})], "messages[0].parts[0].state", "must not be null"),
        ([user("u1", {"type": "data-x"})], "messages[0].parts[0].data", "required field is missing"),
        ([user("u1", {"type": "file", "url": "u"})], "messages[0].parts[0].mediaType", "required field is missing"),
        (
            [user("u1", {"type": "text", "text": "x", "providerMetadata": {"openai": 1}})],
            "messages[0].parts[0].providerMetadata.openai",
            "must be an object",
        ),
    ],
)
def test_message_level_rejections(value: object, path: str, reason: str) -> None:
    assert_issue(value, path, reason, allow_system=True)


def test_path_names_the_message_and_part() -> None:
    messages = [
        user("u1"),
        assistant("a1", TEXT),
        assistant("a2", {"type": "tool-x", "state": "input-available", "input": {}}),
    ]
    assert issues_of(messages) == [("messages[2].parts[0].toolCallId", "required field is missing")]


@pytest.mark.parametrize(
    ("part", "path", "reason"),
    [
        (tool("running", input={}), "state", "must be one of 'input-streaming'"),
        ({"type": "tool-x", "toolCallId": "c", "input": {}}, "state", "required field is missing"),
        (tool("input-available"), "input", 'required field is missing (state "input-available")'),
        (tool("approval-requested", approval={"id": "p"}), "input", "required field is missing"),
        (tool("output-denied", approval={"id": "p", "approved": False}), "input", "required field is missing"),
        (tool("output-available", input={}), "output", 'required field is missing (state "output-available")'),
        (tool("output-error", input={}), "errorText", "required field is missing"),
        (tool("output-error", input={}, errorText=None), "errorText", "required field is missing"),
        (tool("approval-requested", input={}), "approval", "required field is missing"),
        (tool("approval-responded", input={}), "approval", "required field is missing"),
        (tool("output-denied", input={}), "approval", 'required field is missing (state "output-denied")'),
        (
            tool("input-available", input={}, output=1),
            "output",
            'must not be present when the state is "input-available"',
        ),
        (tool("input-streaming", errorText="e"), "errorText", "must not be present"),
        (tool("input-available", input={}, approval={"id": "p"}), "approval", "must not be present"),
        (tool("approval-responded", input={}, approval={"id": "p", "approved": True}, output=1), "output", "must not"),
        (tool("output-available", input={}, output=1, errorText="e"), "errorText", "must not be present"),
        (tool("output-error", input={}, errorText="e", output=1), "output", "must not be present"),
        (tool("output-denied", input={}, approval={"id": "p", "approved": False}, output=1), "output", "must not"),
        (
            tool("approval-requested", input={}, approval={"id": "p", "approved": True}),
            "approval.approved",
            "must not be present while the approval is still requested",
        ),
        (
            tool("approval-requested", input={}, approval={"id": "p", "reason": "r"}),
            "approval.reason",
            "still requested",
        ),
        (tool("approval-responded", input={}, approval={"id": "p"}), "approval.approved", "must be true or false"),
        (
            tool("approval-responded", input={}, approval={"id": "p", "approved": None}),
            "approval.approved",
            "must be true or false",
        ),
        (
            tool("output-available", input={}, output=1, approval={"id": "p", "approved": False}),
            "approval.approved",
            "true",
        ),
        (tool("output-error", input={}, errorText="e", approval={"id": "p"}), "approval.approved", "must be true"),
        (tool("output-denied", input={}, approval={"id": "p", "approved": True}), "approval.approved", "must be false"),
        (tool("output-available", input={}, output=1, approval=None), "approval", "must not be null"),
        (tool("approval-requested", input={}, approval={"approved": None}), "approval.id", "required field is missing"),
        (tool("input-streaming", rawInput={"a": 1}), "rawInput", "must be a string"),
        (tool("input-streaming", inputEncoding="xml"), "inputEncoding", "must be one of 'json' or 'text'"),
        (tool("input-available", input={}, providerExecuted="true"), "providerExecuted", "must be true or false"),
        (tool("input-available", input={}, title=None), "title", "must not be null"),
        (tool("input-available", input={}, toolMetadata=[1]), "toolMetadata", "must be an object"),
        ({"type": "dynamic-tool", "toolCallId": "c", "state": "input-available", "input": {}}, "toolName", "missing"),
        (
            {
                "type": "dynamic-tool",
                "toolName": "t",
                "toolCallId": "c",
                "state": "input-available",
                "input": 1,
                "dynamic": True,
            },
            "dynamic",
            "must be one of",
        ),
    ],
)
def test_tool_part_rejections(part: Json, path: str, reason: str) -> None:
    assert_issue([assistant("a1", part)], f"messages[0].parts[0].{path}", reason)


def test_model_level_rule_is_reported_once_with_the_precise_path() -> None:
    issues = issues_of([assistant("a1", tool("output-error", input={}))])
    assert issues == [("messages[0].parts[0].errorText", 'required field is missing (state "output-error")')]


def test_steering_message_part_errors_come_from_the_selected_member_only() -> None:
    part = {"type": "steering-message", "id": "s", "parts": [{"type": "text"}]}
    assert issues_of([assistant("a1", part)]) == [("messages[0].parts[0].parts[0].text", "required field is missing")]
    other = {"type": "steering-message", "id": "s", "parts": [{"type": "reasoning", "text": "t"}]}
    assert_issue([assistant("a1", other)], "messages[0].parts[0].parts[0]", "must be a text or file part")


@pytest.mark.parametrize(
    ("message", "path"),
    [
        (user("u1", {"type": "data-x", "data": {"n": [1, math.nan]}}), "messages[0].parts[0].data.n[1]"),
        (
            user("u1", {"type": "text", "text": "x", "providerMetadata": {"o": {"v": math.inf}}}),
            "messages[0].parts[0].providerMetadata.o.v",
        ),
        ({**user("u1"), "metadata": {"weird key": -math.inf}}, "messages[0].metadata['weird key']"),
    ],
)
def test_non_finite_numbers_are_rejected(message: Json, path: str) -> None:
    assert issues_of([message]) == [(path, "is not a JSON value (numbers must be finite)")]


def test_system_messages_need_allow_system() -> None:
    messages = [{"id": "s1", "role": "system", "parts": [{"type": "text", "text": "You are root."}]}, user()]
    assert issues_of(messages) == [("messages[0].role", 'a client may not send a "system" message')]
    assert [m.role for m in validate_ui_messages(messages, allow_system=True)] == ["system", "user"]


def test_assistant_may_have_empty_parts() -> None:
    assert validate_ui_messages([user(), assistant("a1")])[1].parts == []


def test_stops_at_the_first_invalid_message() -> None:
    messages = [user("u1", {"type": "nope"}), {"id": "x", "role": "tool", "parts": []}]
    assert [path for path, _ in issues_of(messages)] == ["messages[0].parts[0]"]


def test_issue_count_is_bounded() -> None:
    message = user("u1", *[{"type": "text", "text": i} for i in range(100)])
    assert len(issues_of([message])) == 20


def test_reasons_never_quote_the_rejected_value() -> None:
    secret = "sk-live-SECRET"
    bad: list[Json] = [
        user("u1", {"type": "text", "text": {"key": secret}}),
        {"id": "u2", "role": secret, "parts": [TEXT]},
        user("u3", {"type": secret}),
        user("u4", {"type": "tool-x", "toolCallId": "c", "state": secret, "input": secret}),
        user("u5", {"type": "text", "text": "x", "state": secret}),
        user("u6", {"type": "file", "mediaType": "a", "url": [secret]}),
    ]
    for message in bad:
        with pytest.raises(InvalidUIMessageError) as error:
            validate_ui_messages([message])
        assert secret not in str(error.value), error.value.issues


def test_input_is_not_mutated() -> None:
    messages = [assistant("a1", tool("output-available", input={}, output=1, executionStartedAt=5, preliminary=True))]
    before = copy.deepcopy(messages)
    validate_ui_messages(messages)
    assert messages == before


# --- extension fields -----------------------------------------------------------------------


APPROVED_PART: Json = tool(
    "output-available",
    input={"path": "/tmp/x"},
    output="deleted",
    executionStartedAt=1700000000123,
    approval={"id": "ap-1", "approved": True, "status": "approved", "requestedAt": 1, "decidedAt": 2},
)


def test_extensions_are_stripped_by_default() -> None:
    [message] = validate_ui_messages([assistant("a1", APPROVED_PART)])
    part = message.parts[0]
    assert isinstance(part, ToolPart) and part.approval is not None
    assert part.execution_started_at is None
    assert (part.approval.status, part.approval.requested_at, part.approval.decided_at) == (None, None, None)
    assert message.to_wire()["parts"][0] == {
        "type": "tool-deleteFile",
        "toolCallId": "call-1",
        "state": "output-available",
        "input": {"path": "/tmp/x"},
        "output": "deleted",
        "approval": {"id": "ap-1", "approved": True},
    }


def test_extensions_are_kept_on_request() -> None:
    [message] = validate_ui_messages([assistant("a1", APPROVED_PART)], keep_extensions=True)
    part = message.parts[0]
    assert isinstance(part, ToolPart) and part.approval is not None
    assert part.execution_started_at == 1700000000123
    assert (part.approval.status, part.approval.requested_at, part.approval.decided_at) == ("approved", 1, 2)
    assert message.to_wire()["parts"][0] == APPROVED_PART


def test_state_leftovers_are_stripped_by_default_and_kept_with_extensions() -> None:
    part = tool("output-available", input={}, output=1, rawInput="{}", inputEncoding="json")
    assert "rawInput" not in validate_ui_messages([assistant("a1", part)])[0].to_wire()["parts"][0]
    assert validate_ui_messages([assistant("a1", part)], keep_extensions=True)[0].to_wire()["parts"][0] == part


def test_snake_case_names_cannot_set_extensions() -> None:
    part = tool("input-available", input={}, execution_started_at=5, approval_status="approved")
    [message] = validate_ui_messages([assistant("a1", part)], keep_extensions=True)
    assert isinstance(message.parts[0], ToolPart)
    assert message.parts[0].execution_started_at is None


def test_extension_values_are_still_checked_when_kept() -> None:
    part = {**APPROVED_PART, "executionStartedAt": "soon"}
    assert_issue(
        [assistant("a1", part)], "messages[0].parts[0].executionStartedAt", "must be an integer", keep_extensions=True
    )
    validate_ui_messages([assistant("a1", part)])  # stripped, so no error by default


# --- caller schemas -------------------------------------------------------------------------


class Weather(BaseModel):
    city: str
    celsius: float


class Meta(BaseModel):
    conversation_id: str


def test_data_schemas_validate_and_normalise_data() -> None:
    messages = [user("u1", {"type": "data-weather", "data": {"city": "Paris", "celsius": "21", "x": 1}})]
    [message] = validate_ui_messages(messages, data_schemas={"weather": Weather})
    part = message.parts[0]
    assert isinstance(part, DataPart) and part.data == {"city": "Paris", "celsius": 21.0}


def test_data_schemas_reject_bad_or_unknown_data() -> None:
    bad = [user("u1", TEXT, {"type": "data-weather", "data": {"city": "Paris"}})]
    assert_issue(
        bad, "messages[0].parts[1].data.celsius", "required field is missing", data_schemas={"weather": Weather}
    )
    unknown = [user("u1", {"type": "data-other", "data": 1})]
    assert_issue(unknown, "messages[0].parts[0].data", "no data schema", data_schemas={"weather": Weather})


def test_metadata_schema() -> None:
    adapter = TypeAdapter(Meta)
    good = [{**user("u1"), "metadata": {"conversation_id": "c1"}}]
    assert validate_ui_messages(good, metadata_schema=adapter)[0].metadata == {"conversation_id": "c1"}
    assert_issue([user("u1")], "messages[0].metadata", "must be an object", metadata_schema=Meta)
    assert_issue(
        [{**user("u1"), "metadata": {}}], "messages[0].metadata.conversation_id", "missing", metadata_schema=Meta
    )


def test_metadata_schema_does_not_invent_an_absent_key() -> None:
    [message] = validate_ui_messages([user("u1")], metadata_schema=TypeAdapter(dict[str, int] | None))
    assert "metadata" not in message.to_wire()


# --- ChatRequest ----------------------------------------------------------------------------


CONTINUATION_BODY: Json = {
    "extra": "E",
    "id": "chat-1",
    "messages": [
        user("u1"),
        assistant(
            "srv-msg-0",
            {"type": "step-start"},
            tool("approval-responded", input={"path": "/tmp/x"}, approval={"id": "aitxt-2", "approved": True}),
        ),
    ],
    "trigger": "submit-message",
    "messageId": "srv-msg-0",
}


def test_parse_chat_request_keeps_extra_body_and_round_trips() -> None:
    request = parse_chat_request(CONTINUATION_BODY)
    assert (request.id, request.trigger, request.message_id) == ("chat-1", "submit-message", "srv-msg-0")
    assert request.extra_body == {"extra": "E"}
    assert chat_request_to_wire(request) == CONTINUATION_BODY
    assert message_to_wire(request.messages[0]) == user("u1")


def test_message_id_null_or_absent() -> None:
    body = {"id": "c", "messages": [user()], "trigger": "submit-message"}
    assert parse_chat_request(body).message_id is None
    request = parse_chat_request({**body, "messageId": None})
    assert request.message_id is None and "messageId" not in chat_request_to_wire(request)


def test_sdk_keys_win_over_extra_body_on_the_wire() -> None:
    request = ChatRequest(id="c", messages=[UIMessage(id="a", role="assistant")], trigger="submit-message")
    request.extra_body.update(id="other", trigger="x", region="eu")
    assert chat_request_to_wire(request) == {
        "id": "c",
        "messages": [{"id": "a", "role": "assistant"}],
        "trigger": "submit-message",
        "region": "eu",
    }


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ([], [("", "must be a JSON object")]),
        ({"messages": [user()], "trigger": "submit-message"}, [("id", "required field is missing")]),
        ({"id": 1, "messages": [user()], "trigger": "submit-message"}, [("id", "must be a string")]),
        ({"id": "c", "messages": [user()]}, [("trigger", "required field is missing")]),
        ({"id": "c", "messages": [user()], "trigger": "resume-stream"}, [("trigger", 'must be "submit-message" or')]),
        (
            {"id": "c", "messages": [user()], "trigger": "submit-message", "messageId": 3},
            [("messageId", "must be a string")],
        ),
        ({"id": "c", "trigger": "submit-message"}, [("messages", "must be provided")]),
        (
            {"id": "c", "messages": [user("u1", {"type": "text"})], "trigger": "regenerate-message"},
            [("messages[0].parts[0].text", "required field is missing")],
        ),
        ({}, [("id", "missing"), ("trigger", "missing"), ("messages", "must be provided")]),
    ],
)
def test_parse_chat_request_errors(body: object, expected: list[tuple[str, str]]) -> None:
    with pytest.raises(InvalidUIMessageError) as error:
        parse_chat_request(body)
    issues = error.value.issues
    assert len(issues) == len(expected), issues
    for (path, reason), (want_path, want_reason) in zip(issues, expected, strict=True):
        assert path == want_path and want_reason in reason


def test_parse_chat_request_rejects_non_json_extras() -> None:
    body = {"id": "c", "messages": [user()], "trigger": "submit-message", "when": object()}
    with pytest.raises(InvalidUIMessageError) as error:
        parse_chat_request(body)
    assert error.value.issues == [("when", "must be a JSON value")]


def test_parse_chat_request_rejects_system_unless_allowed() -> None:
    system = {"id": "s", "role": "system", "parts": [TEXT]}
    body = {"id": "c", "messages": [system, user()], "trigger": "submit-message"}
    with pytest.raises(InvalidUIMessageError) as error:
        parse_chat_request(body)
    assert error.value.issues == [("messages[0].role", 'a client may not send a "system" message')]
    assert parse_chat_request(body, allow_system=True).messages[0].role == "system"


def test_parse_chat_request_strips_client_approval_facts() -> None:
    body = copy.deepcopy(CONTINUATION_BODY)
    body["messages"][1]["parts"][1]["approval"].update(status="approved", decidedAt=5)
    part = parse_chat_request(body).messages[1].parts[1]
    assert isinstance(part, ToolPart) and part.approval is not None and part.approval.status is None


# --- the turn plan --------------------------------------------------------------------------


def request(trigger: str, *messages: Json, message_id: str | None = None) -> ChatRequest:
    body: Json = {"id": "chat", "messages": list(messages), "trigger": trigger}
    if message_id is not None:
        body["messageId"] = message_id
    return parse_chat_request(body)


def ids(plan: TurnPlan) -> list[str]:
    return [message.id for message in plan.history]


def test_submit_new_message() -> None:
    plan = plan_turn(request("submit-message", user("u1"), assistant("a1", TEXT), user("u2")))
    assert (plan.kind, ids(plan), plan.response_message_id, plan.is_continuation) == (
        "new-reply",
        ["u1", "a1", "u2"],
        None,
        False,
    )


def test_submit_edit_names_the_last_user_message() -> None:
    plan = plan_turn(request("submit-message", user("u1"), message_id="u1"))
    assert (plan.kind, ids(plan)) == ("new-reply", ["u1"])


def test_continuation_after_approval() -> None:
    plan = plan_turn(parse_chat_request(CONTINUATION_BODY))
    assert (plan.kind, ids(plan), plan.response_message_id) == ("continuation", ["u1", "srv-msg-0"], "srv-msg-0")
    assert plan.is_continuation


def test_continuation_after_tool_output_without_message_id() -> None:
    part = tool("output-available", input={}, output="ok")
    plan = plan_turn(request("submit-message", user("u1"), assistant("a1", part)))
    assert (plan.kind, plan.response_message_id) == ("continuation", "a1")


@pytest.mark.parametrize(
    ("message_id", "reason"), [("u1", "must name the last message"), ("ghost", "does not name a message")]
)
def test_submit_message_id_must_name_the_last_message(message_id: str, reason: str) -> None:
    req = request("submit-message", user("u1"), assistant("a1", TEXT), message_id=message_id)
    with pytest.raises(InvalidUIMessageError) as error:
        plan_turn(req)
    assert error.value.issues[0][0] == "messageId" and reason in error.value.issues[0][1]


def test_regenerate_without_message_id_uses_the_list_as_sent() -> None:
    plan = plan_turn(request("regenerate-message", user("u1"), assistant("a1", TEXT), user("u2")))
    assert (plan.kind, ids(plan), plan.response_message_id, plan.replaced_message_id) == (
        "regenerate",
        ["u1", "a1", "u2"],
        None,
        None,
    )
    assert not plan.is_continuation


def test_regenerate_naming_a_present_assistant_drops_it_and_what_follows() -> None:
    req = request(
        "regenerate-message", user("u1"), assistant("a1", TEXT), user("u2"), assistant("a2", TEXT), message_id="a1"
    )
    plan = plan_turn(req)
    assert (plan.kind, ids(plan), plan.replaced_message_id) == ("regenerate", ["u1"], "a1")


def test_regenerate_naming_a_user_message_cuts_after_it() -> None:
    req = request("regenerate-message", user("u1"), assistant("a1", TEXT), user("u2"), message_id="u1")
    plan = plan_turn(req)
    assert (plan.kind, ids(plan), plan.replaced_message_id) == ("regenerate", ["u1"], None)


def test_regenerate_naming_a_message_the_client_already_removed() -> None:
    req = request("regenerate-message", user("u1"), message_id="a1")  # what regenerate({messageId: 'a1'}) sends
    plan = plan_turn(req)
    assert (ids(plan), plan.replaced_message_id) == (["u1"], "a1")
    assert plan_turn(req, known_message_ids={"u1", "a1"}).replaced_message_id == "a1"


def test_regenerate_naming_an_unknown_message() -> None:
    req = request("regenerate-message", user("u1"), message_id="ghost")
    with pytest.raises(InvalidUIMessageError) as error:
        plan_turn(req, known_message_ids={"u1", "a1"})
    assert error.value.issues == [("messageId", "does not name a message of this chat")]


def test_regenerate_cannot_remove_every_message() -> None:
    req = request("regenerate-message", assistant("a0", TEXT), user("u1"), message_id="a0")
    with pytest.raises(InvalidUIMessageError) as error:
        plan_turn(req)
    assert error.value.issues[0][0] == "messageId"


def test_is_continuation_rule() -> None:
    history = validate_ui_messages([user("u1"), assistant("a1", TEXT)])
    assert is_continuation(history, "a1")
    assert not is_continuation(history, "a2")
    assert not is_continuation(history[:1], "u1")  # same id, but not an assistant message
    assert not is_continuation([], "a1")


def test_messages_after_replaces_or_appends() -> None:
    continued = plan_turn(parse_chat_request(CONTINUATION_BODY))
    response = UIMessage(id="srv-msg-0", role="assistant", parts=[])
    assert [m.id for m in continued.messages_after(response)] == ["u1", "srv-msg-0"]
    assert continued.messages_after(response)[-1] is response
    fresh = plan_turn(request("submit-message", user("u1")))
    new = UIMessage(id="a9", role="assistant", parts=[])
    assert [m.id for m in fresh.messages_after(new)] == ["u1", "a9"]


# --- Stepline's rules for what it stores (beyond the SDK's validation) -----------------------


def body_with(*messages: Json, **fields: Any) -> Json:
    return {"id": "chat-1", "trigger": "submit-message", "messages": list(messages), **fields}


UNSAFE = "http:, https: or data:"


def file_part(url: str) -> Json:
    return {"type": "file", "mediaType": "text/html", "url": url}


@pytest.mark.parametrize(
    ("body", "path", "reason"),
    [
        (body_with(user("")), "messages[0].id", "1-200 characters"),
        (body_with(user("x" * 201)), "messages[0].id", "1-200 characters"),
        (body_with(user("has#hash")), "messages[0].id", "1-200 characters"),
        (body_with(user(), id=""), "id", "1-200 characters"),
        (body_with(user(), messageId="a b"), "messageId", "1-200 characters"),
        (body_with({**user(), "metadata": [1]}), "messages[0].metadata", "must be an object"),
        (body_with({**user(), "metadata": "x"}), "messages[0].metadata", "must be an object"),
        (body_with(user("u1", file_part("javascript:alert(1)"))), "messages[0].parts[0].url", UNSAFE),
        (
            body_with(user("u1", file_part(" JavaScript:alert(1)"))),
            "messages[0].parts[0].url",
            "http:, https: or data:",
        ),
        (
            body_with(user("u1", file_part("java\tscript:alert(1)"))),
            "messages[0].parts[0].url",
            "http:, https: or data:",
        ),
        (body_with(user("u1", file_part("vbscript:x"))), "messages[0].parts[0].url", UNSAFE),
        (body_with(user("u1", file_part("/relative/x.png"))), "messages[0].parts[0].url", "absolute URL"),
        (
            body_with(user("u1", {"type": "steering-message", "id": "s1", "parts": [file_part("javascript:1")]})),
            "messages[0].parts[0].parts[0].url",
            "http:, https: or data:",
        ),
        (
            body_with(user(), assistant("a1", tool("input-available", input={}, toolCallId=""))),
            "messages[1].parts[0].toolCallId",
            "1-200 characters",
        ),
        (
            body_with(user(), assistant("a1", tool("approval-requested", input={}, approval={"id": "appr 1"}))),
            "messages[1].parts[0].approval.id",
            "1-200 characters",
        ),
    ],
)
def test_what_the_store_could_not_keep_is_refused_naming_the_field(body: Json, path: str, reason: str) -> None:
    with pytest.raises(InvalidUIMessageError) as error:
        parse_chat_request(body)
    assert any(p == path and reason in r for p, r in error.value.issues), error.value.issues


@pytest.mark.parametrize(
    "url", ["https://example.com/a.png", "http://localhost:8000/x", "data:image/png;base64,iVBORw0KGgo="]
)
def test_safe_file_urls_and_object_metadata_pass(url: str) -> None:
    parsed = parse_chat_request(body_with({**user("u-1.x:y@z", file_part(url)), "metadata": {"k": 1}}))
    assert parsed.messages[0].metadata == {"k": 1}
