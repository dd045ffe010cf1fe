"""The validation boundary's cost: `parse_json_body` against plain `json.loads` on the same bodies.

    .venv/bin/python bench/body_limits.py

Bodies of up to the 6 MB limit, shaped to be expensive for each check: many short strings, many
numbers, many small objects, many small nested arrays, one long string, and many strings with a
lone surrogate at the very end (the bisecting search for its path). For each: the size, the best of
three `json.loads` (the reference, measured in the same run) and `parse_json_body` (which includes
that parse), and the ratio. Figures only; no assertions.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable

from stepline.errors import InvalidUIMessageError
from stepline.protocol._json import loads_strict
from stepline.protocol.json_limits import parse_json_body

BODIES: dict[str, str] = {
    "1.2M short strings": json.dumps(["a"] * 1_200_000),
    "1.5M numbers": json.dumps([0] * 1_500_000),
    "200k small objects": json.dumps([{"type": "text", "text": "hello"}] * 200_000),
    "100k arrays 10 deep": json.dumps([[[[[[[[[[1]]]]]]]]]] * 100_000),
    "one 6 MB string": json.dumps("x" * 6_000_000),
    "1.2M strings + a lone surrogate last": json.dumps(["a"] * 1_200_000 + ["\ud800"]),
}


def best_of_three(call: Callable[[], object]) -> float:
    times: list[float] = []
    for _ in range(3):
        start = time.perf_counter()
        with contextlib.suppress(InvalidUIMessageError):  # the last body is refused, as it should be
            call()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    print(f"{'body':40} {'MB':>5} {'json.loads ms':>14} {'parse_json_body ms':>19} {'ratio':>6}")
    for name, text in BODIES.items():
        data = text.encode()
        plain = best_of_three(lambda data=data: loads_strict(data))
        checked = best_of_three(lambda data=data: parse_json_body(data))
        print(f"{name:40} {len(data) / 1e6:5.1f} {plain * 1000:14.0f} {checked * 1000:19.0f} {checked / plain:6.1f}")


if __name__ == "__main__":
    main()
