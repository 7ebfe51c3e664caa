"""List prices of the documented decision models: input tokens only, no output charge."""

from __future__ import annotations

# US dollars per input token (docs.typesafe.ai/models; OpenAI's Decisions guide). Output
# tokens are free on both wires. A model not listed here has an unknown price, never 0.
PER_INPUT_TOKEN: dict[str, float] = {
    "jev-latest": 0.042e-6,
    "jev-preview": 0.042e-6,
    "jev-1.13.0": 0.042e-6,
    "jev-1.14.0": 0.042e-6,
    "gpt-6-luna": 0.10e-6,
}


def input_price(model: str, input_tokens: int) -> float | None:
    """What ``input_tokens`` cost at ``model``'s list price, or None when it is not listed."""
    rate = PER_INPUT_TOKEN.get(model)
    return None if rate is None else rate * input_tokens
