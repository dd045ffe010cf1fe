"""Acme's support desk: answers a signed-in customer about their orders, and refunds them.

    STEPLINE_AGENT=examples.support_desk.agent:agent STEPLINE_MODEL=openai:gpt-5.1 stepline dev

- The instructions are a function of the run context: the customer's name and tier come from the
  authorizer's claims (`name`, `custom:tier`), the language from the chat request's `body`
  (`{"locale": "fr"}`, sent with `DefaultChatTransport`'s `body` option). They are fixed when the
  run starts, so a refund approved the next day still answers in the customer's language.
- `lookup_order` only sees the customer's own orders (`claims["sub"]`).
- `refund_order` needs a person's approval above the automatic limit (a per-call policy), and
  records the refund in the conversation's workspace, so it lasts across processes.
- `context` keeps a long conversation within the model's window: once a request would pass 80%
  of it, a compaction step has the model summarize the oldest turns (the newest four groups stay
  verbatim, a tool call never apart from its result), and later turns carry that summary. The
  refund records and order lookups outlive it in the workspace and the order system.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, JsonValue

from stepline import Agent, RunContext, is_step_count, tool
from stepline.context.policy import ContextPolicy
from stepline.protocol._json import dumps
from stepline.store import workspace

AUTOMATIC_REFUND_LIMIT = 20.0
"""Refunds up to this amount go through without a person."""
CONTEXT = ContextPolicy(threshold=0.8, keep_recent=4)
"""Compaction past 80% of the model's window, the newest four groups verbatim."""

ORDERS: dict[str, dict[str, Any]] = {
    # The order system this example stands in for (read only): order id -> order.
    "A-1001": {"customer": "cust-ann", "item": "Espresso machine", "total": 249.0, "status": "delivered"},
    "A-1002": {"customer": "cust-ann", "item": "Milk frother", "total": 18.5, "status": "delivered"},
    "A-2001": {"customer": "cust-bob", "item": "Grinder", "total": 99.0, "status": "shipped"},
}

OrderId = Annotated[str, Field(pattern=r"^A-\d{4}$", description="The order number, such as A-1001")]


class OrderNotFoundError(LookupError):
    """No order of this customer has that number (the model reads the message)."""


def _own_order(order_id: str, context: RunContext) -> dict[str, Any]:
    order = ORDERS.get(order_id)
    if order is None or order["customer"] != context.claims.get("sub"):
        raise OrderNotFoundError(f"no order {order_id} for this customer")
    return order


@tool
def lookup_order(order_id: OrderId, context: RunContext) -> dict[str, Any]:
    """Look up one of the customer's orders: the item, the total and where it is."""
    order = _own_order(order_id, context)
    return {"order_id": order_id, **{k: v for k, v in order.items() if k != "customer"}}


def refund_policy(tool_name: str, input: JsonValue, context: Any) -> Literal["user-approval"] | None:
    """Refunds above the automatic limit wait for a person; smaller ones go through."""
    amount = input.get("amount", 0) if isinstance(input, dict) else 0
    return "user-approval" if isinstance(amount, int | float) and amount > AUTOMATIC_REFUND_LIMIT else None


@tool(approval=refund_policy)
def refund_order(
    order_id: OrderId,
    amount: Annotated[float, Field(gt=0, description="The amount to refund, in euros")],
    reason: Literal["damaged", "late", "not-as-described", "other"],
    context: RunContext,
) -> dict[str, Any]:
    """Refund (part of) an order. Refunds above 20 euros wait for a support agent's approval."""
    order = _own_order(order_id, context)
    if amount > order["total"]:
        raise ValueError(f"a refund cannot exceed the order total ({order['total']})")
    if context.blobs is None:
        raise RuntimeError("this runtime has no file storage for refunds")
    refund = {"order_id": order_id, "amount": amount, "reason": reason, "run": context.run_id}
    path = f"refunds/{order_id}.json"
    workspace.write_file(
        context.blobs, context.user_id, context.conversation_id, path, dumps(refund).encode(), "application/json"
    )
    return {"refunded": amount, "record": path}


LANGUAGES = {"en": "English", "fr": "French", "de": "German"}


def instructions(context: RunContext) -> str:
    """Who the customer is and how to answer them, from the run's claims and request body."""
    name = context.claims.get("name") or "the customer"
    tier = context.claims.get("custom:tier") or "standard"
    locale = context.body.get("locale")
    language = LANGUAGES.get(locale if isinstance(locale, str) else "en", "English")
    return (
        f"You are Acme's support agent, talking to {name} ({tier} customer). Answer in {language}. "
        "Look orders up before answering about them. Offer a refund only for damaged, late or "
        "not-as-described items; say that refunds above "
        f"{AUTOMATIC_REFUND_LIMIT:.0f} euros are checked by a colleague."
    )


agent = Agent(
    name="support",
    description="Acme's support desk: orders and refunds.",
    instructions=instructions,
    tools=[lookup_order, refund_order],
    context=CONTEXT,
    temperature=0.3,
    stop_when=is_step_count(10),
)
