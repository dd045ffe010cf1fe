"""Prices and cost: the cost of a call from its usage, a table's lookups, and the errors of a bad table.

GIVEN a price table, WHEN a call's usage is priced, THEN each kind of token is billed at its own
price (cache reads and writes, reasoning), an unknown model or count leaves the cost unknown
(None, never 0), and a malformed table or an unknown provider is an error naming the entry.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from stepline.loop.price_list import DEFAULT_PRICES, PRICES_DATE
from stepline.loop.prices import ModelPrice, PriceTable, PriceTableError, priced
from stepline.loop.state import UsageTotals

PRICE = ModelPrice(input=2.0, cached_input=0.5, cache_write=2.5, output=8.0, reasoning=10.0)


def test_each_kind_of_token_at_its_own_price() -> None:
    usage = UsageTotals(
        input_tokens=1_000_000 + 200_000 + 100_000,  # the input total includes cache reads and writes
        cached_input_tokens=200_000,
        cache_write_tokens=100_000,
        output_tokens=300_000,
        reasoning_tokens=100_000,  # part of the output total
    )
    expected = 1.0 * 2.0 + 0.2 * 0.5 + 0.1 * 2.5 + 0.2 * 8.0 + 0.1 * 10.0
    cost = PRICE.cost_usd(usage)
    assert cost is not None and math.isclose(cost, expected)


def test_kinds_without_their_own_price_are_billed_as_input_or_output() -> None:
    plain = ModelPrice(input=1.0, output=4.0)
    usage = UsageTotals(
        input_tokens=2_000_000, cached_input_tokens=1_000_000, output_tokens=1_000_000, reasoning_tokens=500_000
    )
    cost = plain.cost_usd(usage)
    assert cost is not None and math.isclose(cost, 2.0 + 4.0)


@pytest.mark.parametrize(
    "usage",
    [UsageTotals(), UsageTotals(input_tokens=10), UsageTotals(output_tokens=10)],
)
def test_an_unknown_count_leaves_the_cost_unknown(usage: UsageTotals) -> None:
    assert PRICE.cost_usd(usage) is None
    assert priced(PriceTable({"openai:m": PRICE}), "openai", "m", usage).cost_usd is None


def test_an_unpriced_model_has_no_cost_and_its_metadata_no_cost_key() -> None:
    usage = UsageTotals(input_tokens=10, output_tokens=5)
    result = priced(DEFAULT_PRICES, "openai", "a-model-nobody-priced", usage)
    assert result.cost_usd is None
    assert result.to_metadata() == {"inputTokens": 10, "outputTokens": 5}


def test_a_dated_model_id_finds_its_undated_price() -> None:
    assert DEFAULT_PRICES.price_of("openai", "gpt-4o-2024-08-06") == DEFAULT_PRICES.price_of("openai", "gpt-4o")
    assert DEFAULT_PRICES.price_of("anthropic", "claude-sonnet-4-5-20250929") is not None
    assert DEFAULT_PRICES.price_of("anthropic", "claude-sonnet-4-5-x") is None
    assert DEFAULT_PRICES.price_of("openai", "gpt-4o") != DEFAULT_PRICES.price_of("anthropic", "gpt-4o")


def test_the_shipped_table_is_dated_and_prices_both_providers() -> None:
    assert PRICES_DATE.count("-") == 2
    providers = {key.partition(":")[0] for key in DEFAULT_PRICES.entries}
    assert providers == {"openai", "anthropic"}
    for price in DEFAULT_PRICES.entries.values():
        assert 0 < price.input <= price.output
        assert price.cached_input is not None and price.cached_input < price.input


def test_costs_sum_only_while_every_call_was_priced() -> None:
    priced_call = UsageTotals(input_tokens=10, output_tokens=5, cost_usd=0.25)
    unpriced_call = UsageTotals(input_tokens=10, output_tokens=5)
    assert UsageTotals().plus(priced_call).cost_usd == 0.25
    assert priced_call.plus(priced_call).cost_usd == 0.5
    assert priced_call.plus(unpriced_call).cost_usd is None
    assert unpriced_call.plus(priced_call).cost_usd is None
    assert priced_call.plus(UsageTotals()).cost_usd == 0.25
    assert priced_call.plus(priced_call).to_metadata() == {"inputTokens": 20, "outputTokens": 10, "costUsd": 0.5}


def test_overrides_replace_and_add() -> None:
    table = PriceTable.parse(
        {"openai:gpt-4o": {"input": 1, "output": 2}, "openai:my-fine-tune": {"input": 3, "output": 4}}, source="t"
    )
    merged = DEFAULT_PRICES.merged(table)
    assert merged.price_of("openai", "gpt-4o") == ModelPrice(input=1, output=2)
    assert merged.price_of("openai", "my-fine-tune") == ModelPrice(input=3, output=4)
    assert merged.price_of("openai", "gpt-4.1") == DEFAULT_PRICES.price_of("openai", "gpt-4.1")


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ({"openai:m": {"input": -1, "output": 2}}, "openai:m: input"),
        ({"openai:m": {"input": "cheap", "output": 2}}, "openai:m: input"),
        ({"openai:m": {"input": float("nan"), "output": 2}}, "openai:m: input"),
        ({"openai:m": {"input": 1}}, "openai:m: output"),
        ({"openai:m": {"input": 1, "output": 2, "outptu": 3}}, "openai:m: outptu"),
        ({"opneai:m": {"input": 1, "output": 2}}, "unknown model provider 'opneai'"),
        ({"gpt-4o": {"input": 1, "output": 2}}, "'gpt-4o' is not 'provider:model-id'"),
        ({"openai:m": 3}, "openai:m"),
        ([1, 2], "expected an object"),
    ],
)
def test_a_malformed_table_is_an_error_naming_the_entry(raw: object, named: str) -> None:
    with pytest.raises(PriceTableError) as raised:
        PriceTable.parse(raw, source="STEPLINE_PRICES")
    assert str(raised.value).startswith("STEPLINE_PRICES")
    assert named in str(raised.value)


def test_a_price_file_that_is_missing_or_not_json_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(PriceTableError, match="cannot read the price table"):
        PriceTable.from_file(tmp_path / "absent.json", source="STEPLINE_PRICES")
    bad = tmp_path / "prices.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(PriceTableError, match="cannot read the price table"):
        PriceTable.from_file(bad, source="STEPLINE_PRICES")
