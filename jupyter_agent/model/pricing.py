"""Estimated cost of a response, from list prices in USD per million tokens.

Prices change; this table is a best effort for display, not billing. A model not in
the table costs 0.0 (shown as unknown rather than guessed). Cache writes (5-minute
TTL) cost 1.25x the input price, cache reads 0.1x.
"""

from __future__ import annotations

import re

from ..loop.usage import Usage

__all__ = ["PRICES", "price_for", "cost_usd"]

# (pattern matched against the model id, input $/MTok, output $/MTok). First match wins,
# so more specific patterns come first. Every Sonnet since 3.5 and Haiku since 4.5 has
# kept its family's price, so newer ids in those families are assumed to keep it too.
PRICES: list[tuple[str, float, float]] = [
    (r"claude-opus-(?:4-(?:[5-9]|\d\d)|[5-9])", 5.0, 25.0),
    (r"claude-opus-4|claude-3-opus", 15.0, 75.0),
    (r"claude-sonnet-|claude-3-[57]-sonnet", 3.0, 15.0),
    (r"claude-haiku-", 1.0, 5.0),
    (r"claude-3-5-haiku", 0.8, 4.0),
    (r"claude-3-haiku", 0.25, 1.25),
]
CACHE_WRITE_FACTOR = 1.25
CACHE_READ_FACTOR = 0.1


def price_for(model: str) -> tuple[float, float] | None:
    """``(input, output)`` USD per million tokens for ``model``, or None if unknown."""
    for pattern, inp, out in PRICES:
        if re.search(pattern, model or ""):
            return inp, out
    return None


def cost_usd(model: str, usage: Usage) -> float:
    """Estimated USD cost of ``usage`` on ``model`` (0.0 for an unknown model)."""
    price = price_for(model)
    if price is None:
        return 0.0
    inp, out = price
    total = (usage.input_tokens * inp
             + usage.cache_creation_input_tokens * inp * CACHE_WRITE_FACTOR
             + usage.cache_read_input_tokens * inp * CACHE_READ_FACTOR
             + usage.output_tokens * out)
    return total / 1_000_000
