"""A deployment's own price table: `STEPLINE_PRICES`, the path of a JSON file (pure).

The file holds entries in the form of `PriceTable.parse` (`{"openai:gpt-5.1": {"input": 1.25,
"cachedInput": 0.125, "output": 10}}`); they replace or add to the table Stepline ships. A missing
file or a malformed entry raises `PriceTableError` naming the variable, the file and the entry:
`stepline dev` and every Lambda read it when they start.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..loop.price_list import DEFAULT_PRICES
from ..loop.prices import PriceTable

__all__ = ["PRICES_VARIABLE", "prices_from_env"]

PRICES_VARIABLE = "STEPLINE_PRICES"


def prices_from_env(env: Mapping[str, str]) -> PriceTable:
    """The shipped table amended by the file `STEPLINE_PRICES` names (unset or empty: as shipped)."""
    path = env.get(PRICES_VARIABLE, "").strip()
    if not path:
        return DEFAULT_PRICES
    return DEFAULT_PRICES.merged(PriceTable.from_file(Path(path), source=PRICES_VARIABLE))
