"""The chat request a `useChat` client POSTs, its transport codec, and the plan for one turn.

The body is what `HttpChatTransport.sendMessages` (`packages/ai/src/ui/http-chat-transport.ts`,
`ai@7.0.173`) sends: `{...transport.body, ...call.body, id, messages, trigger, messageId}`. The four
SDK keys win over the extras; `messageId` is left out when the client has none. Messages are
validated with `validate_ui_messages` (the SDK's `validateUIMessages`, plus Stepline's rule that a
client may not send a system message), then with Stepline's rules for what it stores (`_request_rules`:
id shapes, object metadata, safe file URLs). `parse_chat_request` and `chat_request_to_wire` are
the parse/print pair of the transport; a failure is an `InvalidUIMessageError`, which the HTTP
layer turns into 400.

`plan_turn` decides what the model sees and which assistant message the response is. It follows
the real client (`packages/ai/src/ui/chat.ts`): the client removes the regenerated assistant
message itself and `regenerate()` sends no `messageId`, so a server that required a `messageId`
naming an assistant message would reject every regenerate of a real client.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from ..errors import InvalidUIMessageError
from ._request_rules import id_problem, request_issues
from ._ui_raw import Issue
from ._ui_validation import Schema, validate_ui_messages
from .parts import UIMessage

__all__ = [
    "TRIGGERS",
    "ChatRequest",
    "Trigger",
    "TurnKind",
    "TurnPlan",
    "chat_request_to_wire",
    "is_continuation",
    "message_to_wire",
    "parse_chat_request",
    "plan_turn",
]

Trigger = Literal["submit-message", "regenerate-message"]
TRIGGERS: Final[tuple[str, ...]] = ("submit-message", "regenerate-message")
_SDK_KEYS: Final = frozenset({"id", "messages", "trigger", "messageId"})


class ChatRequest(BaseModel):
    """One POST of `DefaultChatTransport`.

    Attributes:
        id: The chat id (`Chat.id`).
        messages: The client's whole message list, validated.
        trigger: `"submit-message"` (new message, or continuing after a tool output/approval) or
            `"regenerate-message"`.
        message_id: The wire's `messageId`; `None` when absent.
        extra_body: Any other top-level keys (the transport's and the call's `body` options).
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    messages: list[UIMessage]
    trigger: Trigger
    message_id: str | None = None
    extra_body: dict[str, JsonValue] = Field(default_factory=dict[str, JsonValue])


def parse_chat_request(
    payload: object,
    *,
    allow_system: bool = False,
    keep_extensions: bool = False,
    data_schemas: Mapping[str, Schema] | None = None,
    metadata_schema: Schema | None = None,
) -> ChatRequest:
    """Parse a decoded request body.

    Args:
        payload: The JSON body, decoded (use `loads_strict`, which rejects NaN like `JSON.parse`).
        allow_system: Accept system messages (never for a body that came from a browser).
        keep_extensions: Keep Stepline's extension fields (only for messages Stepline wrote itself).
        data_schemas: Passed to `validate_ui_messages`.
        metadata_schema: Passed to `validate_ui_messages`.

    Raises:
        InvalidUIMessageError: Paths are `id`, `trigger`, `messageId` and `messages[…]…`.
    """
    body = _as_object(payload)
    if body is None:
        raise InvalidUIMessageError([("", "the request body must be a JSON object")])
    chat_id, trigger, message_id, issues = _sdk_fields(body)
    messages: list[UIMessage] = []
    try:
        messages = validate_ui_messages(
            body.get("messages"),
            allow_system=allow_system,
            keep_extensions=keep_extensions,
            data_schemas=data_schemas,
            metadata_schema=metadata_schema,
        )
    except InvalidUIMessageError as error:
        issues.extend(error.issues)
    issues.extend(request_issues(messages))
    if issues or chat_id is None or trigger is None:
        raise InvalidUIMessageError(issues)
    extra: dict[str, JsonValue] = {key: value for key, value in body.items() if key not in _SDK_KEYS}
    try:
        return ChatRequest(id=chat_id, messages=messages, trigger=trigger, message_id=message_id, extra_body=extra)
    except ValidationError as error:  # only a caller passing non-JSON Python objects gets here
        keys = dict.fromkeys(str(e["loc"][1]) if len(e["loc"]) > 1 else "" for e in error.errors())
        raise InvalidUIMessageError([(key, "must be a JSON value") for key in keys]) from None


def _as_object(payload: object) -> dict[str, JsonValue] | None:
    if not isinstance(payload, dict):
        return None
    return {str(key): value for key, value in cast(dict[object, JsonValue], payload).items()}


def _sdk_fields(body: Mapping[str, object]) -> tuple[str | None, Trigger | None, str | None, list[Issue]]:
    """`id`, `trigger` and `messageId` of a body, and what is wrong with them."""
    issues: list[Issue] = []
    chat_id = body.get("id")
    if not isinstance(chat_id, str):
        issues.append(("id", "required field is missing" if "id" not in body else "must be a string"))
        chat_id = None
    elif (problem := id_problem(chat_id)) is not None:
        issues.append(("id", problem))
    trigger: Trigger | None = None
    match body.get("trigger"):
        case "submit-message":
            trigger = "submit-message"
        case "regenerate-message":
            trigger = "regenerate-message"
        case _:
            reason = 'must be "submit-message" or "regenerate-message"'
            issues.append(("trigger", "required field is missing" if "trigger" not in body else reason))
    message_id = body.get("messageId")  # `null` is taken as absent; the real client leaves the key out
    if message_id is not None and not isinstance(message_id, str):
        issues.append(("messageId", "must be a string"))
        message_id = None
    elif message_id is not None and (problem := id_problem(message_id)) is not None:
        issues.append(("messageId", problem))
    return chat_id, trigger, message_id, issues


def message_to_wire(message: UIMessage) -> dict[str, Any]:
    """A UIMessage as JSON: camelCase keys, absent keys left out."""
    return message.to_wire()


def chat_request_to_wire(request: ChatRequest) -> dict[str, Any]:
    """The body `DefaultChatTransport` would send for this request."""
    body: dict[str, Any] = dict(request.extra_body)
    body.update(id=request.id, messages=[message_to_wire(m) for m in request.messages], trigger=request.trigger)
    if request.message_id is not None:
        body["messageId"] = request.message_id
    return body


# --- the turn plan --------------------------------------------------------------------------


TurnKind = Literal["new-reply", "continuation", "regenerate"]


def is_continuation(original_messages: list[UIMessage], response_message_id: str) -> bool:
    """Whether a response continues the last original message rather than being appended.

    The SDK's rule (`ui-message-stream/handle-ui-message-stream-finish.ts`, `isContinuation`): the
    last original message is an assistant message with the response message's id. Then the saved
    list replaces that message; otherwise the response is appended. (`get-response-ui-message-id.ts`
    is the other half: a server that knows the original messages reuses the last message's id when
    it is an assistant message, and otherwise generates a new one.)
    """
    last = original_messages[-1] if original_messages else None
    return last is not None and last.role == "assistant" and last.id == response_message_id


@dataclass(frozen=True)
class TurnPlan:
    """What one request asks for.

    Attributes:
        kind: `"new-reply"`, `"continuation"` or `"regenerate"`.
        history: The original messages of the turn: what the model is given (converted) and what
            the response is saved against. On a continuation it ends with the continued assistant
            message, whose parts the response keeps extending.
        response_message_id: The id the response must use in its `start` chunk: the continued
            message's id; `None` for a new reply or a regeneration (the caller generates one). A
            different id on a continuation makes the client show a second assistant message.
        replaced_message_id: On a regeneration, the assistant message being replaced, when known
            (the client named it with `messageId`); the store should drop it and all after it.
    """

    kind: TurnKind
    history: list[UIMessage]
    response_message_id: str | None = None
    replaced_message_id: str | None = None

    @property
    def is_continuation(self) -> bool:
        return self.kind == "continuation"

    def messages_after(self, response: UIMessage) -> list[UIMessage]:
        """The conversation once `response` is final (the SDK's `onEnd` `messages`)."""
        if is_continuation(self.history, response.id):
            return [*self.history[:-1], response]
        return [*self.history, response]


def plan_turn(request: ChatRequest, *, known_message_ids: Collection[str] | None = None) -> TurnPlan:
    """Decide the history, the kind of turn and the response message id of a request.

    `submit-message` (what `sendMessage` and the automatic send after a tool output or approval
    send): the `messageId`, if any, must name the last message. If that is an assistant message
    the turn continues it (same id), else it is a new reply (a `messageId` naming the last user
    message is an edit; the client has already cut the list after it).

    `regenerate-message`: `regenerate()` removes the assistant message on the client and sends no
    `messageId`, so the history is the list as sent. `regenerate({messageId})` sends the id of the
    removed message (not in the list) or of a user message (kept, the list is cut after it). A
    client that keeps the answer in the list sends an assistant id that is still there: it and every later
    message are dropped. An id in neither the list nor `known_message_ids` (when given: the ids the
    chat store holds) is an error.

    Raises:
        InvalidUIMessageError: With path `messageId`.
    """
    if request.trigger == "regenerate-message":
        return _plan_regenerate(request, known_message_ids)
    messages = request.messages
    last = messages[-1]
    if request.message_id is not None and request.message_id != last.id:
        where = "does not name a message in messages" if _index_of(messages, request.message_id) is None else None
        raise InvalidUIMessageError([("messageId", where or "must name the last message for submit-message")])
    if last.role == "assistant":
        return TurnPlan(kind="continuation", history=list(messages), response_message_id=last.id)
    return TurnPlan(kind="new-reply", history=list(messages))


def _plan_regenerate(request: ChatRequest, known_message_ids: Collection[str] | None) -> TurnPlan:
    messages = list(request.messages)
    target = request.message_id
    if target is None:
        return TurnPlan(kind="regenerate", history=messages)
    index = _index_of(messages, target)
    if index is None:
        if known_message_ids is not None and target not in known_message_ids:
            raise InvalidUIMessageError([("messageId", "does not name a message of this chat")])
        return TurnPlan(kind="regenerate", history=messages, replaced_message_id=target)
    if messages[index].role != "assistant":
        return TurnPlan(kind="regenerate", history=messages[: index + 1])
    if index == 0:
        raise InvalidUIMessageError([("messageId", "names the first message: nothing would be left to answer")])
    return TurnPlan(kind="regenerate", history=messages[:index], replaced_message_id=target)


def _index_of(messages: list[UIMessage], message_id: str) -> int | None:
    return next((i for i, message in enumerate(messages) if message.id == message_id), None)
