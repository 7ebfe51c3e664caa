"""Spending: what a run will cost before it starts, what it cost after, and a budget.

The estimate walks the run the way scoring would, without asking anything: the
deterministic gates decide which artifacts reach the judge, the answer cache which of their
questions are already answered; every remaining question is one call, whose prompt litellm's
tokenizer counts and whose price comes from litellm's price table.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from canon.check.confirm import looked_twice
from canon.check.runner import ScoringPlan, gate_outcomes, response_requests
from canon.check.variants import replicate_for
from canon.core.artifact import Artifact, text_digest
from canon.core.baseline import SETTLED_FORMAT, Baseline, record_for, recorded_question
from canon.core.scoring import Answer, ArtifactResult
from canon.core.usage import UNKNOWN, Usage, UsageSummary, format_cost, summarize
from canon.errors import BudgetExceededError, ConfigError
from canon.judge import notices
from canon.judge.base import Judge, JudgeRequest, inner_judge, request_prompt, response_judge
from canon.judge.cache import CachingJudge, answer_key
from canon.judge.usage import (
    ESTIMATED_COMPLETION_TOKENS,
    context_window,
    count_prompt_tokens,
    price_of,
)

if TYPE_CHECKING:
    from canon.judge.decisions.judge import DecisionJudge
    from canon.judge.litellm_judge import LiteLLMJudge


def run_usage(results: Sequence[ArtifactResult]) -> UsageSummary:
    """What a scored run spent, in total and per question kind."""
    spent: list[tuple[str, Usage | None]] = []
    for result in results:
        for cell in result.cells:
            # an unscored question made calls too (its usage) or none at all (None, which is
            # no answer without a call either)
            if cell.state != "unscored" or cell.usage is not None:
                spent.append((cell.question.kind, cell.usage))
        if result.reask_usage is not None:
            spent.append(("confirmation", result.reask_usage))
    return summarize(spent)


@dataclass(frozen=True, slots=True)
class Estimate:
    """What a run would ask and spend, worked out without asking anything."""

    judge: str
    questions: int  # questions the run needs answered
    calls: int  # of those, the ones the judge must be asked (not in the answer cache)
    stopped: int  # artifacts a deterministic gate stops before the judge
    prompt_tokens: int
    completion_tokens: int  # an assumption: see ESTIMATED_COMPLETION_TOKENS
    cost: float | None  # USD; None when litellm cannot price the model
    batch: bool = False
    scripted: bool = False  # a judge that is not a model (MockJudge): nothing to pay
    reasks: int = 0  # of ``calls``, confirmation re-asks the baseline's own cells needed
    # The questions the calls ask, when a call asks many (a decision judge: one call per
    # response); None: one question a call.
    asking: int | None = None

    @property
    def cached(self) -> int:
        """Questions the answer cache already holds."""
        return self.questions - (self.calls if self.asking is None else self.asking)

    def line(self) -> str:
        """The estimate for people."""
        price = " at the batch price" if self.batch else ""
        if self.scripted:
            return (
                f"estimate: {self.judge} is a scripted judge: {self.questions} question(s) "
                f"answered by its script, {self.stopped} artifact(s) stopped by a gate, no "
                "model calls, cost $0.0000; nothing was asked"
            )
        reasks = (
            f", including {self.reasks} confirmation re-ask(s) as many as the baseline needed"
            if self.reasks
            else ""
        )
        many = "" if self.asking is None else f" asking {self.asking} question(s)"
        return (
            f"estimate: {self.calls} judge call(s){many} to {self.judge}{reasks} ({self.cached} of "
            f"{self.questions} question(s) already in the answer cache, {self.stopped} "
            f"artifact(s) stopped by a gate), about {self.prompt_tokens} prompt + "
            f"{self.completion_tokens} completion tokens, cost {format_cost(self.cost)}{price}; "
            "nothing was asked"
        )

    def as_data(self) -> dict[str, Any]:
        """The estimate as plain data, for ``--format json``."""
        return {
            "judge": self.judge,
            "questions": self.questions,
            "calls": self.calls,
            "cached": self.cached,
            "stopped_by_gates": self.stopped,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "completion_tokens_per_call_assumed": ESTIMATED_COMPLETION_TOKENS,
            "cost_usd": UNKNOWN if self.cost is None else round(self.cost, 8),
            "batch": self.batch,
            "scripted": self.scripted,
            "confirmation_reasks": self.reasks,
        }


def model_judge(judge: Judge) -> LiteLLMJudge | None:
    """The litellm judge behind any wrappers (cache, budget), or None for another judge."""
    from canon.judge.litellm_judge import LiteLLMJudge

    return inner_judge(judge, LiteLLMJudge)


def baseline_reasks(baseline: Baseline, plan: ScoringPlan) -> dict[tuple[str, str], int]:
    """The re-asks each recorded cell needed when it was accepted: (key, question) -> count.

    An unchanged suite tends to need the same confirmation again, so a check's estimate
    counts them (minus those the answer cache holds: each re-ask has a key of its own).
    """
    reasks: dict[tuple[str, str], int] = {}
    # From format 4 accept asks every question twice before any confirmation: two asks are
    # no confirmation at all, but a confirmed cell needs its second look again at check (as
    # a re-ask, since a check looks once at an unchanged text).
    looks = 2 if baseline.format >= SETTLED_FORMAT else 1
    for key, record in baseline.artifacts.items():
        for question in plan.questions:
            row = recorded_question(record, question)
            # a replicated record's asks count one first answer per response
            extra = (record.replicates or 1) - 1
            if row is not None and row.asks is not None and row.asks > looks + extra:
                reasks[(key, question.id)] = row.asks - 1 - extra
    return reasks


def planned_looks(
    plan: ScoringPlan,
    artifacts: Sequence[Artifact],
    *,
    baseline: Baseline | None = None,
    record: bool = False,
) -> dict[tuple[str, str], int]:
    """The asks beyond the first a run plans per cell: the second looks confirmation takes
    (``canon.check.confirm.looked_twice``, the same rule the run follows) and, in a check,
    the confirmation re-asks the baseline's own cells needed: (key, question) -> count."""
    reasks = baseline_reasks(baseline, plan) if baseline is not None and not record else {}
    for artifact in artifacts:
        looks = looked_twice(
            plan.questions,
            digest=text_digest(artifact.text),
            record=None
            if baseline is None
            else record_for(baseline, artifact.key, artifact.input_digest),
            recording=record,
            baseline=baseline,
            constitution=plan.constitution.digest,
        )
        for qid in looks:
            cell = (artifact.key, qid)
            reasks[cell] = max(reasks.get(cell, 0), 1)
    return reasks


@dataclass(frozen=True, slots=True)
class PlannedRequest:
    """One request a run would send: which judge answers it, its answer-cache key (None
    when that judge has no cache) and the request itself."""

    judge: Judge
    key: str | None
    request: JudgeRequest


def pending_requests(
    plan: ScoringPlan,
    artifacts: Sequence[Artifact],
    reasks: Mapping[tuple[str, str], int] | None = None,
) -> tuple[list[PlannedRequest], int, int]:
    """The requests scoring would send, built by the plan as the run builds them and routed
    to the judge that would answer each (``ScoringPlan.judge_for``), leaving out what that
    judge's answer cache holds; with the number already cached and the number of artifacts
    a gate stops. ``reasks`` adds each cell's planned later asks (variants 1, 2, ...)."""
    pending: list[PlannedRequest] = []
    seen: set[str] = set()
    cached = stopped = 0
    questions = plan.questions
    for artifact in artifacts:
        if any(outcome.stops for outcome in gate_outcomes(plan, artifact)):
            stopped += 1
            continue
        # every response's first ask, then the later asks, each showing the response it would;
        # a judge answering whole responses asks every wording in its first call
        first = plan.judge_for(0)
        whole = response_judge(first) is not None
        # the first pass as the run sends it: a whole-response judge's calls (every wording,
        # runner.response_requests), else each question once per response
        asks = [
            (first, request)
            for shown in _responses(artifact)
            for request in (
                response_requests(plan, shown, questions)
                if whole
                else [plan.request(shown, question) for question in questions]
            )
        ]
        for question in questions:
            for variant in range(1, 1 + (reasks or {}).get((artifact.key, question.id), 0)):
                judge = plan.judge_for(variant)
                if whole and response_judge(judge) is not None:
                    continue  # a later look at a whole-response judge: its first call made it
                shown = artifact.replicate(replicate_for(variant, len(artifact.texts)))
                asks.append((judge, plan.request(shown, question, variant)))
        for judge, request in asks:
            cache = judge if isinstance(judge, CachingJudge) else None
            if cache is None:
                pending.append(PlannedRequest(judge, None, request))
                continue
            key = answer_key(dict(cache.inner.cache_identity()), request)
            if key in seen or cache.cache.get(key) is not None:
                cached += 1  # a repeat within the run is answered once, then read back
                continue
            seen.add(key)
            pending.append(PlannedRequest(judge, key, request))
    return pending, cached, stopped


def _responses(artifact: Artifact) -> list[Artifact]:
    # an artifact with replicates is asked each question once per response
    return [artifact.replicate(i) for i in range(len(artifact.texts))]


def estimate_run(
    plan: ScoringPlan,
    artifacts: Sequence[Artifact],
    *,
    batch: bool = False,
    baseline: Baseline | None = None,
    record: bool = False,
) -> Estimate:
    """How many calls a run would make and what they would cost, asking nothing: the
    requests the run would send (``pending_requests``, with the looks it plans), each priced
    for the judge that would answer it (a ``confirm_judge`` takes the later looks)."""
    reasks = planned_looks(plan, artifacts, baseline=baseline, record=record)
    pending, cached, stopped = pending_requests(plan, artifacts, reasks)
    return estimate_requests(plan, pending, batch=batch, cached=cached, stopped=stopped)


def decision_judge(judge: Judge) -> DecisionJudge | None:
    """The decision judge behind any wrappers (cache), or None for another judge. Imported
    here, not at the top: a run without one never loads the HTTP transport."""
    from canon.judge.decisions.judge import DecisionJudge

    return inner_judge(judge, DecisionJudge)


def _with_decisions(rest: Estimate, decided: Sequence[PlannedRequest], names: str) -> Estimate:
    """``rest`` (the other judges' requests) plus the calls of a decision judge: one call
    per response carries every request about it, priced by its input tokens alone."""
    from canon.judge.decisions.asking import asked_question, decision_state
    from canon.judge.decisions.prices import input_price

    calls: dict[tuple[int, str, str], list[JudgeRequest]] = {}
    judges: dict[int, DecisionJudge] = {}
    for planned in decided:
        judge = decision_judge(planned.judge)
        assert judge is not None
        judges[id(judge)] = judge
        artifact = planned.request.artifact
        calls.setdefault((id(judge), artifact.key, artifact.text), []).append(planned.request)
    tokens = 0
    cost: float | None = 0.0
    for (judge_id, _key, _text), requests in calls.items():
        judge = judges[judge_id]
        first = requests[0]
        state = decision_state(first.constitution, first.artifact)
        asked = [asked_question(r.question, r.variant, state) for r in requests]
        wire = judge.client.wire
        count = wire.tokens(wire.build(judge.model, state, asked))
        tokens += count
        price = input_price(judge.model, count)
        cost = None if cost is None or price is None else cost + price
    scripted = rest.scripted and rest.calls == 0
    base_cost = 0.0 if scripted else rest.cost
    return Estimate(
        names,
        rest.questions + len(decided),
        (0 if scripted else rest.calls) + len(calls),
        rest.stopped,
        rest.prompt_tokens + tokens,
        rest.completion_tokens,
        None if cost is None or base_cost is None else cost + base_cost,
        rest.batch,
        reasks=rest.reasks,
        asking=(0 if scripted else rest.calls) + len(decided),
    )


def call_messages(request: JudgeRequest) -> list[dict[str, str]]:
    """The messages the judge sends for a request (as the online path renders them)."""

    return request_prompt(request).as_messages()


def completion_guess(judge: LiteLLMJudge) -> int:
    """The completion tokens an estimate assumes per sample."""
    if judge.max_tokens is not None:
        return min(judge.max_tokens, ESTIMATED_COMPLETION_TOKENS)
    return ESTIMATED_COMPLETION_TOKENS


def refuse_over_budget(estimate: Estimate, max_cost: float, source: object) -> None:
    """Stop before spending when the estimate is over ``max_cost`` or cannot be priced."""
    if estimate.calls == 0:
        return
    if estimate.cost is None:
        raise ConfigError(
            f"{source}: max_cost is set but litellm has no price for {estimate.judge}, so "
            "the budget cannot be enforced; remove max_cost or use a model litellm can price"
        )
    if estimate.cost > max_cost:
        raise BudgetExceededError(
            f"the run would cost about {format_cost(estimate.cost)} for {estimate.calls} "
            f"judge call(s), over max_cost {format_cost(max_cost)} in {source}; nothing was "
            "spent; raise max_cost, score fewer artifacts, or use --batch where the provider "
            "offers a batch price"
        )


# Token counts kept for requests that may be sent again (retries, top-ups): enough for every
# request in flight under any sane concurrency, small enough never to matter in memory.
PROMPT_COUNTS_KEPT = 4096


def _request_key(model: str, messages: Sequence[Mapping[str, Any]]) -> bytes:
    """A short digest of what a request's prompt tokens depend on: the model and the messages."""
    text = json.dumps([model, list(messages)], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


class Ledger:
    """What a run may spend and has spent: one per run, shared by every judge it guards
    (the judge and a ``confirm_judge`` draw on the same ``max_cost``)."""

    def __init__(self, max_cost: float, source: object) -> None:
        self.max_cost = max_cost
        self.source = source
        self.spent = 0.0
        self.calls = 0
        self.reserved = 0.0

    def reserve(self, guess: float | None) -> float:
        """Reserve one request's likely cost (None: unknown, so any budget refuses it), or
        stop the run before it crosses ``max_cost``."""
        guess = math.inf if guess is None else guess
        if self.calls:  # requests so far say what one really costs here; trust the larger
            guess = max(guess, self.spent / self.calls)
        if self.spent + self.reserved + guess > self.max_cost:
            raise BudgetExceededError(
                f"stopped before crossing max_cost {format_cost(self.max_cost)} in "
                f"{self.source}: {self.calls} request(s) spent {format_cost(self.spent)} "
                f"and the next would cost about {format_cost(guess)}; the answers paid for are "
                "in the answer cache (a re-run reuses them); raise max_cost to finish the run"
            )
        self.reserved += guess
        return guess

    def book(self, reserved: float, spent: Usage | None) -> None:
        """Release a reservation and book the request's real cost (its guess if unpriced)."""
        self.reserved -= reserved
        if spent is None:
            return  # no reply came (a timeout, a refused connection): nothing to pay
        self.calls += 1
        self.spent += reserved if spent.cost is None else spent.cost


class CallBudget:
    """The run's ``Ledger`` as the guard of a judge priced per call (a decision model)."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def reserve_cost(self, guess: float | None) -> float:
        """Reserve a call's likely cost, or stop the run before it crosses the budget."""
        return self.ledger.reserve(guess)

    def book(self, reserved: float, spent: Usage | None) -> None:
        """Book what the call cost."""
        self.ledger.book(reserved, spent)


class BudgetJudge:
    """A judge whose every request is refused when it could take the run past ``max_cost``.

    The guard sits on the model judge's requests, not on its answers: a question that
    retries unreadable replies, or tops up samples from an endpoint that ignores ``n``, pays
    for each request, and a question that ends unscored still counts what it spent. Each
    request reserves its estimated cost before it starts (so concurrent requests cannot
    together cross the line) and then books what it really cost, on the run's ``Ledger``.
    """

    def __init__(self, inner: LiteLLMJudge, ledger: Ledger) -> None:
        self.inner = inner
        self.ledger = ledger
        self._prompt_tokens: OrderedDict[bytes, int] = OrderedDict()
        inner.spend_guard = self

    @property
    def max_cost(self) -> float:
        """The run's budget in USD."""
        return self.ledger.max_cost

    @property
    def spent(self) -> float:
        """What the run has spent so far, across every judge on its ledger."""
        return self.ledger.spent

    @property
    def name(self) -> str:
        """The inner judge's name."""
        return self.inner.name

    def cache_identity(self) -> dict[str, Any]:
        """The inner judge's identity: the budget does not change answers."""
        return self.inner.cache_identity()

    async def answer(self, request: JudgeRequest) -> Answer:
        """The inner judge's answer; its requests are guarded one by one."""
        return await self.inner.answer(request)

    def reserve(self, model: str, messages: list[dict[str, str]], samples: int) -> float:
        """Reserve one request's likely cost, or stop the run before it crosses the budget."""
        from canon.judge.litellm_module import load_litellm

        litellm = load_litellm()
        prompt = self._count_prompt(litellm, model, messages)
        guess = price_of(litellm, model, prompt, samples * completion_guess(self.inner))
        return self.ledger.reserve(guess)

    def _count_prompt(self, litellm: Any, model: str, messages: list[dict[str, str]]) -> int:
        """The request's prompt tokens, counted once however often it is retried or topped up."""
        key = _request_key(model, messages)
        count = self._prompt_tokens.get(key)
        if count is None:
            # the tokenizer is most of what a reservation costs; a digest is a small part of it
            count = count_prompt_tokens(litellm, model, messages)
            self._prompt_tokens[key] = count
            if len(self._prompt_tokens) > PROMPT_COUNTS_KEPT:
                self._prompt_tokens.popitem(last=False)  # the least recently used
        else:
            self._prompt_tokens.move_to_end(key)
        return count

    def book(self, reserved: float, spent: Usage | None) -> None:
        """Release a reservation and book the request's real cost (its guess if unpriced)."""
        self.ledger.book(reserved, spent)

    def prepaid(self, cost: float) -> None:
        """Book what a batch already spent, so the online rest is held to what is left."""
        self.ledger.spent += cost


def estimate_requests(
    plan: ScoringPlan,
    requests: Sequence[PlannedRequest | JudgeRequest],
    *,
    batch: bool = False,
    cached: int = 0,
    stopped: int = 0,
) -> Estimate:
    """What sending exactly these requests would ask and cost, asking nothing (besides them,
    ``cached`` questions the cache answers and ``stopped`` artifacts). A plain JudgeRequest
    goes to the plan's judge; a PlannedRequest to the judge it names, priced for that judge.
    ``estimate_run``'s pricing, and the estimate of a command that lists its own requests
    (``canon calibrate``)."""
    planned = [
        r if isinstance(r, PlannedRequest) else PlannedRequest(plan.judge, None, r)
        for r in requests
    ]
    names = list(dict.fromkeys(p.judge.name for p in planned)) or [plan.judge.name]
    decided = [p for p in planned if decision_judge(p.judge) is not None]
    if decided:
        return _with_decisions(
            estimate_requests(
                plan,
                [p for p in planned if decision_judge(p.judge) is None],
                batch=batch,
                cached=cached,
                stopped=stopped,
            ),
            decided,
            " + ".join(names),
        )
    judged = [(model_judge(p.judge), p.request) for p in planned]
    paid = [(judge, request) for judge, request in judged if judge is not None]
    if not paid:  # scripted judges answer for free
        questions = len(planned) + cached
        return Estimate(" + ".join(names), questions, 0, stopped, 0, 0, 0.0, False, True)
    from canon.judge.litellm_module import load_litellm

    litellm = load_litellm()
    prompt_tokens = completion_tokens = 0
    cost: float | None = 0.0
    by_judge: dict[int, tuple[LiteLLMJudge, list[JudgeRequest]]] = {}
    for judge, request in paid:
        by_judge.setdefault(id(judge), (judge, []))[1].append(request)
    for judge, asked in by_judge.values():
        window = context_window(judge.model)
        prompt = 0
        oversized: set[str] = set()
        for request in asked:
            tokens = count_prompt_tokens(litellm, judge.model, call_messages(request))
            prompt += tokens
            key = request.artifact.key
            if window is not None and tokens > window and key not in oversized:
                oversized.add(key)  # said once per artifact, as the online path says it
                notices.context_overflow(judge.model, tokens, window, key)
        samples = judge.samples
        completion = len(asked) * samples * completion_guess(judge)
        if samples > 1 and not judge.takes_n:  # each further sample a request of its own
            prompt *= samples
        price = price_of(litellm, judge.model, prompt, completion, batch=batch)
        prompt_tokens += prompt
        completion_tokens += completion
        cost = None if cost is None or price is None else cost + price
    return Estimate(
        " + ".join(names),
        len(planned) + cached,
        len(paid),
        stopped,
        prompt_tokens,
        completion_tokens,
        cost,
        batch,
        reasks=sum(request.variant > 0 for _, request in paid),
    )
