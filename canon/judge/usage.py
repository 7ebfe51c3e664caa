"""Token and cost accounting for model judges, from litellm's own usage and price table.

The litellm judge opens a *meter* for each question it answers and notes every response
on it; the answer then carries what its calls spent. A contextvar carries the meter so the
call path needs no extra parameters: each question runs in its own asyncio task, and a
task's context is its own.

A model litellm cannot price has an unknown cost (``None``), never 0.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import importlib.util
import json
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from canon.core.scoring import Answer
from canon.core.usage import Usage, total
from canon.judge.litellm_module import model_facts

# A completion's length is not known before the call; a judge reply is a short reason and
# one ANSWER line. Estimates use this unless max_tokens caps the reply lower.
ESTIMATED_COMPLETION_TOKENS = 60

_meter: contextvars.ContextVar[list[Usage] | None] = contextvars.ContextVar(
    "canon_usage_meter", default=None
)


def open_meter() -> list[Usage]:
    """Start counting the calls made for one answer in the current task."""
    meter: list[Usage] = []
    _meter.set(meter)
    return meter


class SpendGuard(Protocol):
    """A budget asked before every request a model judge sends, and told what it spent."""

    def reserve(self, model: str, messages: list[dict[str, str]], samples: int) -> float:
        """Reserve a request's likely cost, or raise BudgetExceededError to stop the run."""
        ...

    def book(self, reserved: float, spent: Usage | None) -> None:
        """Release a reservation and book what the request cost (None: no reply came)."""
        ...


class CallGuard(Protocol):
    """A budget asked before every call a judge priced by its calls makes (a decision
    model: input tokens only), and told what the call cost."""

    def reserve_cost(self, guess: float | None) -> float:
        """Reserve a call's likely cost (None: unknown), or raise BudgetExceededError."""
        ...

    def book(self, reserved: float, spent: Usage | None) -> None:
        """Release a reservation and book what the call cost (None: no reply came)."""
        ...


def note_response(litellm: Any, model: str, response: Any) -> Usage:
    """One completion's usage, added to the current meter (if one is open)."""
    usage = response_usage(litellm, model, response)
    meter = _meter.get()
    if meter is not None:
        meter.append(usage)
    return usage


def note_raw_response(model: str, body: Mapping[str, Any]) -> Usage:
    """Add a raw OpenAI-style body's usage to the current meter, without importing litellm.

    The direct call path exists to avoid litellm's import and per-call cost, so it prices
    tokens from the price table litellm ships (the one it reads itself offline).
    """
    usage = _get(body, "usage")
    prompt = _count(_get(usage, "prompt_tokens"))
    completion = _count(_get(usage, "completion_tokens"))
    cached = _count(_get(_get(usage, "prompt_tokens_details"), "cached_tokens"))
    spent = Usage(
        calls=1,
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_tokens=cached,
        cost=table_price(model, prompt, completion, cached),
    )
    meter = _meter.get()
    if meter is not None:
        meter.append(spent)
    return spent


def table_price(model: str, prompt: int, completion: int, cached: int = 0) -> float | None:
    """What litellm's bundled price table charges for these tokens; None when unpriced."""
    entry = _table_entry(model)
    if entry is None:
        return None
    rate_in = entry.get("input_cost_per_token")
    rate_out = entry.get("output_cost_per_token")
    if not isinstance(rate_in, int | float) or not isinstance(rate_out, int | float):
        return None
    rate_cached = entry.get("cache_read_input_token_cost")
    if not isinstance(rate_cached, int | float):
        rate_cached = rate_in
    cached = min(cached, prompt)
    return float((prompt - cached) * rate_in + cached * rate_cached + completion * rate_out)


@functools.lru_cache(maxsize=64)
def context_window(model: str) -> int | None:
    """The most input tokens ``model`` reads, from litellm's bundled table; None when unknown.

    Looked up once per model, without importing litellm (the direct path does not load it).
    ``max_input_tokens`` only: the table's ``max_tokens`` is the reply's limit for many models.
    """
    entry = _table_entry(model)
    window = entry.get("max_input_tokens") if entry is not None else None
    valid = isinstance(window, int) and not isinstance(window, bool) and window > 0
    return window if valid else None


def _table_entry(model: str) -> Mapping[str, Any] | None:
    prices = _bundled_prices()
    entry = prices.get(model) or prices.get(model.split("/", 1)[-1])
    return entry if isinstance(entry, Mapping) else None


@functools.lru_cache(maxsize=1)
def _bundled_prices() -> Mapping[str, Any]:
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return {}
    table = Path(spec.origin).parent / "model_prices_and_context_window_backup.json"
    try:
        data = json.loads(table.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, Mapping) else {}


def attach_usage(answer: Answer, meter: Sequence[Usage]) -> Answer:
    """The answer carrying what its calls spent."""
    return dataclasses.replace(answer, usage=total(meter))


def response_usage(litellm: Any, model: str, response: Any, *, batch: bool = False) -> Usage:
    """Tokens and cost of one completion (a litellm response or a raw OpenAI body)."""
    usage = _get(response, "usage")
    prompt = _count(_get(usage, "prompt_tokens"))
    completion = _count(_get(usage, "completion_tokens"))
    details = _get(usage, "prompt_tokens_details")
    cached = _count(_get(details, "cached_tokens")) or _count(
        _get(usage, "cache_read_input_tokens")
    )
    return Usage(
        calls=1,
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_tokens=cached,
        cost=_cost(litellm, model, response, prompt, completion, batch, cached),
    )


def priced(model: str) -> bool:
    """Whether litellm's price table knows ``model`` (looked up once per model)."""
    return model_facts(model).priced


def price_of(
    litellm: Any,
    model: str,
    prompt_tokens: int,
    completion_tokens: int,
    *,
    batch: bool = False,
    cached_tokens: int = 0,
) -> float | None:
    """What litellm's price table charges for these tokens, or None when it cannot say."""
    if not priced(model):
        return None
    try:
        if batch:
            from litellm.cost_calculator import batch_cost_calculator

            usage = litellm.Usage(
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                total_tokens=prompt_tokens + completion_tokens,
            )
            with warnings.catch_warnings():  # litellm's pydantic deprecation noise, per call
                warnings.simplefilter("ignore", DeprecationWarning)
                prompt_cost, completion_cost = batch_cost_calculator(usage=usage, model=model)
        else:
            prompt_cost, completion_cost = litellm.cost_per_token(
                model=model,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                cache_read_input_tokens=cached_tokens,  # priced at the provider's cached rate
            )
    except Exception:  # the table has the model but not these prices
        return None
    return float(prompt_cost) + float(completion_cost)


def count_prompt_tokens(litellm: Any, model: str, messages: list[dict[str, str]]) -> int:
    """The prompt's length in tokens by litellm's tokenizer for the model."""
    return int(litellm.token_counter(model=model, messages=messages))


def _cost(
    litellm: Any,
    model: str,
    response: Any,
    prompt: int,
    completion: int,
    batch: bool,
    cached: int = 0,
) -> float | None:
    if not priced(model):
        return None
    if batch or not hasattr(response, "choices") or isinstance(response, Mapping):
        # a raw body (the direct path, a batch result): the price table, cached tokens apart
        return price_of(litellm, model, prompt, completion, batch=batch, cached_tokens=cached)
    # litellm's own accounting (it knows cached-token discounts and per-provider rules) has
    # already priced the completion on its way back: read it rather than price it twice.
    stamped = _get(_get(response, "_hidden_params"), "response_cost")
    if isinstance(stamped, int | float) and not isinstance(stamped, bool):
        return float(stamped)
    try:
        return float(litellm.completion_cost(completion_response=response, model=model))
    except Exception:
        return None


def _get(value: Any, name: str) -> Any:
    if value is None:
        return None
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
