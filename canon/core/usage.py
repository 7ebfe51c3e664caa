"""Tokens and cost: what judge calls spent, per call, per question kind and per run.

A cost is in US dollars as litellm's price table gives it, or ``None`` when litellm cannot
price the model: an unknown cost is shown as "unknown", never as 0, because 0 would read as
"free". A sum that includes one unknown cost is unknown too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens and cost of one or more judge calls."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens the provider read from its prompt cache
    cost: float | None = 0.0  # USD; None when litellm cannot price the model
    batch_calls: int = 0  # of ``calls``, those made through a provider batch (batch price)

    def __add__(self, other: Usage) -> Usage:
        cost = None if self.cost is None or other.cost is None else self.cost + other.cost
        return Usage(
            calls=self.calls + other.calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cost=cost,
            batch_calls=self.batch_calls + other.batch_calls,
        )

    def as_data(self) -> dict[str, Any]:
        """Plain data for JSON: the cost is a number or the text "unknown"."""
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_prompt_tokens": self.cached_tokens,
            "batch_calls": self.batch_calls,
            "cost_usd": UNKNOWN if self.cost is None else round(self.cost, 8),
        }


def total(usages: Iterable[Usage]) -> Usage:
    """The sum of some usages (no calls, no cost when there are none)."""
    result = Usage()
    for usage in usages:
        result = result + usage
    return result


def format_cost(cost: float | None) -> str:
    """A cost for people: ``$0.0123``, or "unknown"."""
    if cost is None:
        return UNKNOWN
    return f"${cost:.4f}" if cost < 100 else f"${cost:,.2f}"


@dataclass(frozen=True, slots=True)
class UsageSummary:
    """A run's spending: in total, per question kind, and how many answers came for free."""

    run: Usage = field(default_factory=Usage)
    by_kind: Mapping[str, Usage] = field(default_factory=dict)
    reused: int = 0  # answers that cost no call (the answer cache, or a scripted judge)

    def line(self) -> str:
        """One line for a text report."""
        run = self.run
        cached = f" ({run.cached_tokens} cached)" if run.cached_tokens else ""
        text = (
            f"judge usage: {run.calls} call(s), {run.prompt_tokens} prompt{cached} + "
            f"{run.completion_tokens} completion tokens, cost {format_cost(run.cost)}"
        )
        if run.batch_calls:
            text += f" ({run.batch_calls} batch call(s) at the batch price)"
        if self.reused:
            text += f"; {self.reused} answer(s) without a call"
        return text

    def properties(self) -> dict[str, str]:
        """Flat name → text pairs (JUnit properties, HTML rows): the run, then each kind."""
        values: dict[str, str] = {}
        scopes = [("usage", self.run)]
        scopes.extend((f"usage.{kind}", usage) for kind, usage in sorted(self.by_kind.items()))
        for prefix, usage in scopes:
            for name, value in usage.as_data().items():
                values[f"{prefix}.{name}"] = str(value)
        values["usage.answers_without_call"] = str(self.reused)
        return values

    def as_data(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            **self.run.as_data(),
            "answers_without_call": self.reused,
            "by_kind": {kind: usage.as_data() for kind, usage in sorted(self.by_kind.items())},
        }


def summarize(spent: Iterable[tuple[str, Usage | None]]) -> UsageSummary:
    """Summarize (question kind, usage) pairs; ``None`` is an answer that made no call."""
    by_kind: dict[str, Usage] = {}
    reused = 0
    for kind, usage in spent:
        if usage is None:
            reused += 1
        else:
            by_kind[kind] = by_kind.get(kind, Usage()) + usage
    return UsageSummary(run=total(by_kind.values()), by_kind=by_kind, reused=reused)
