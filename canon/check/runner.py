"""Orchestration: deterministic gates, then the judge, then scoring — concurrently."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from canon.core.artifact import Artifact, text_digest
from canon.core.constitution import Constitution
from canon.core.evidence import DecisionRule
from canon.core.gate_outcome import GateOutcome
from canon.core.rubric import Question, Rubric
from canon.core.scoring import (
    Answer,
    ArtifactResult,
    Cell,
    Look,
    judge_verdict,
    refused_cell,
    score_cell,
    stopped_verdict,
    unscored_cell,
)
from canon.core.usage import Usage, total
from canon.errors import JudgeError, JudgeRefusedError, JudgeScriptError
from canon.judge.base import Judge, JudgeRequest, ResponseAnswers, ResponseJudge, response_judge
from canon.judge.concurrency import AdaptiveLimiter
from canon.judge.prompt_cache import prefix_shares

ArtifactGate = Callable[[Artifact], GateOutcome]
ProgressCallback = Callable[[int, int, ArtifactResult], None]

DEFAULT_CONCURRENCY = 8

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ScoringPlan:
    """What every artifact in a run is scored against."""

    constitution: Constitution
    rubric: Rubric
    judge: Judge
    threshold: float
    gates: tuple[ArtifactGate, ...] = ()
    # A second judge that asks the confirmation re-asks (``confirm_judge``), so a flip is
    # confirmed by another model rather than by the first one repeating itself.
    confirm_judge: Judge | None = None
    # Judge calls in flight at most (the limit adapts below it to what the judge sustains).
    concurrency: int = DEFAULT_CONCURRENCY
    # How sure a failing verdict must be before it counts (canon.core.evidence).
    rule: DecisionRule = field(default_factory=DecisionRule)

    @property
    def questions(self) -> tuple[Question, ...]:
        """The rubric's questions for this constitution."""
        return self.rubric.questions_for(self.constitution)

    def judge_for(self, variant: int) -> Judge:
        """The judge that answers ask ``variant``: the first ask goes to the judge, every
        later look (a second look or a confirmation re-ask) to ``confirm_judge`` if set."""
        if variant > 0 and self.confirm_judge is not None:
            return self.confirm_judge
        return self.judge

    def request(
        self, artifact: Artifact, question: Question, variant: int = 0, *, shares: int = 1
    ) -> JudgeRequest:
        """The one request for ``question`` about ``artifact`` (the response it shows) at
        ask ``variant``: scoring, confirmation, batch mode and the estimate all build it
        here, so they send (and count) the same thing."""
        return JudgeRequest(
            question,
            artifact,
            self.constitution,
            self.rubric.instructions,
            variant,
            prefix_shares=shares,
        )


def gate_outcomes(plan: ScoringPlan, artifact: Artifact) -> tuple[GateOutcome, ...]:
    """What the plan's deterministic gates say of an artifact, in the plan's order."""
    return tuple(gate(artifact) for gate in plan.gates)


async def score_artifact(
    plan: ScoringPlan,
    artifact: Artifact,
    limiter: AdaptiveLimiter | None = None,
    *,
    outcomes: tuple[GateOutcome, ...] | None = None,
) -> ArtifactResult:
    """Score one artifact: gates first (or their ``outcomes``, already known), and the judge
    only if no gate stopped it."""
    if outcomes is None:
        outcomes = gate_outcomes(plan, artifact)
    digest = text_digest(artifact.text)
    if any(outcome.stops for outcome in outcomes):
        return replace(stopped_verdict(artifact.key, plan.threshold, outcomes), digest=digest)
    limiter = limiter or AdaptiveLimiter(plan.concurrency)
    questions = plan.questions
    whole = response_judge(plan.judge_for(0))
    if whole is not None:
        cells = await _by_response(plan, whole, artifact, questions, limiter)
        return replace(judge_verdict(artifact.key, cells, plan.threshold, outcomes), digest=digest)
    shares = prefix_shares(questions)
    if artifact.replicates:
        cells = await all_of([_pooled(plan, artifact, q, limiter, shares[q.id]) for q in questions])
    else:
        cells = await all_of([_ask(plan, artifact, q, limiter, shares[q.id]) for q in questions])
    return replace(judge_verdict(artifact.key, cells, plan.threshold, outcomes), digest=digest)


def wordings(question: Question) -> int:
    """How many fixed wordings a question has (its own text and its alternatives)."""
    return len(question.wordings) + 1


def response_requests(
    plan: ScoringPlan, response: Artifact, questions: Sequence[Question]
) -> list[JudgeRequest]:
    """What one call about one response asks a whole-response judge: every question in
    every one of its wordings (the request's variant is the wording). Scoring and the
    estimate both build the call here."""
    return [
        plan.request(response, question, wording)
        for question in questions
        for wording in range(wordings(question))
    ]


async def _by_response(
    plan: ScoringPlan,
    judge: ResponseJudge,
    artifact: Artifact,
    questions: Sequence[Question],
    limiter: AdaptiveLimiter,
) -> list[Cell]:
    """The first pass with a judge that answers a whole response in one call: one call per
    response, every question in every wording; each cell keeps its answers as looks and
    pools them (canon.core.scoring.Cell.looks). A question any look of which has no usable
    answer is unscored (refused, when the judge refused it): never a pass."""
    responses = [artifact.replicate(i) for i in range(len(artifact.texts))]
    calls = await all_of([_call(plan, judge, r, questions, limiter) for r in responses])
    # A call's usage rides on its first question's cell, so a run's total counts it once;
    # the other cells a call answered cost nothing more (an answer from the cache alone has
    # no usage: an answer without a call).
    made = [c.usage for c in calls if c.usage is not None]
    cells: list[Cell] = []
    position = 0
    for index, question in enumerate(questions):
        count = wordings(question)
        looks: list[Look] = []
        failure: JudgeError | None = None
        usage = (total(made) if index == 0 else Usage()) if made else None
        for response, call in enumerate(calls):
            for wording in range(count):
                outcome = call.outcomes.get(position + wording)
                if outcome is None:
                    outcome = JudgeError(f"question {question.id}: no answer")
                if isinstance(outcome, JudgeError):
                    failure = failure or outcome
                    continue
                try:
                    cell = score_cell(question, outcome)
                except JudgeError as exc:
                    failure = failure or exc
                    continue
                looks.append(Look(response, wording, cell.distribution))
        position += count
        cells.append(_pooled_looks(question, looks, failure, usage))
    return cells


def _pooled_looks(
    question: Question, looks: Sequence[Look], failure: JudgeError | None, usage: Usage | None
) -> Cell:
    """One cell from its looks: the mean over responses of each response's mean."""
    if failure is not None:
        if isinstance(failure, JudgeRefusedError):
            return refused_cell(question, str(failure), usage)
        return unscored_cell(question, str(failure), usage, error_type=type(failure).__name__)
    by_response: dict[int, list[Look]] = {}
    for look in looks:
        by_response.setdefault(look.response, []).append(look)
    mixed: dict[str, float] = {}
    for group in by_response.values():
        for look in group:
            for label, mass in look.distribution:
                share = mass / len(group) / len(by_response)
                mixed[label] = mixed.get(label, 0.0) + share
    try:
        cell = score_cell(question, Answer(mixed, None, usage))
    except JudgeError as exc:
        return unscored_cell(question, str(exc), usage, error_type=type(exc).__name__)
    return cell._replace(looks=tuple(looks)) if len(looks) > 1 else cell


async def _call(
    plan: ScoringPlan,
    judge: ResponseJudge,
    response: Artifact,
    questions: Sequence[Question],
    limiter: AdaptiveLimiter,
) -> ResponseAnswers:
    """One call about one response; a call that fails leaves each of its asks unscored."""
    requests = response_requests(plan, response, questions)
    try:
        async with limiter:  # a tripped breaker raises here: every question unscored
            return await judge.answer_all(requests)
    except JudgeScriptError:
        raise
    except JudgeError as exc:
        return ResponseAnswers(dict.fromkeys(range(len(requests)), exc), exc.usage)


async def _pooled(
    plan: ScoringPlan,
    artifact: Artifact,
    question: Question,
    limiter: AdaptiveLimiter,
    shares: int = 1,
) -> Cell:
    """One question asked of every replicate, the answers pooled into one cell.

    Each replicate weighs the same (their distributions are averaged); if any replicate
    goes unanswered the cell is unscored: a pooled answer missing a replicate is not the
    spread the baseline recorded.
    """
    asked = [
        _ask(plan, artifact.replicate(i), question, limiter, shares)
        for i in range(len(artifact.texts))
    ]
    cells = await all_of(asked)
    failed = next((c for c in cells if c.state == "unscored"), None)
    if failed is not None:
        return failed
    mixed: dict[str, float] = {}
    for cell in cells:
        for label, mass in cell.distribution:
            mixed[label] = mixed.get(label, 0.0) + mass / len(cells)
    spent = [c.usage for c in cells if c.usage is not None]
    usage = total(spent) if spent else None
    try:
        pooled = score_cell(question, Answer(mixed, cells[0].rationale, usage))
    except JudgeError as exc:
        return unscored_cell(question, str(exc))
    # each response's answer stays a look of its own (wording 0: the first ask's)
    return pooled._replace(looks=tuple(Look(i, 0, c.distribution) for i, c in enumerate(cells)))


async def _ask(
    plan: ScoringPlan,
    artifact: Artifact,
    question: Question,
    limiter: AdaptiveLimiter,
    shares: int = 1,
) -> Cell:
    request = plan.request(artifact, question, shares=shares)
    try:
        async with limiter:  # a tripped breaker raises here: an unscored cell like the rest
            answer = await plan.judge_for(0).answer(request)
        return score_cell(question, answer)
    except JudgeScriptError:
        raise  # a mis-scripted test must fail loudly, not become an unscored cell
    except JudgeRefusedError as exc:
        return refused_cell(question, str(exc), exc.usage)
    except JudgeError as exc:
        return unscored_cell(question, str(exc), exc.usage, error_type=type(exc).__name__)


async def score_artifacts(
    plan: ScoringPlan,
    artifacts: Sequence[Artifact],
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    on_result: ProgressCallback | None = None,
    limiter: AdaptiveLimiter | None = None,
) -> tuple[ArtifactResult, ...]:
    """Score many artifacts with at most ``concurrency`` judge calls in flight.

    The limit adapts to what the judge sustains (canon.judge.concurrency); pass ``limiter``
    to share one with later calls of the same run, such as confirmation re-asks.
    """
    limiter = limiter or AdaptiveLimiter(concurrency)
    done = 0

    async def one(artifact: Artifact) -> ArtifactResult:
        nonlocal done
        result = await score_artifact(plan, artifact, limiter)
        done += 1
        if on_result is not None:
            on_result(done, len(artifacts), result)
        return result

    return tuple(await all_of([one(artifact) for artifact in artifacts]))


async def all_of(coroutines: Sequence[Coroutine[Any, Any, T]]) -> list[T]:
    """Run coroutines together; on the first failure cancel the rest and raise it as is."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(c) for c in coroutines]
    except BaseExceptionGroup as group_error:
        # Callers expect the original error (e.g. JudgeScriptError), not a group of one.
        raise group_error.exceptions[0] from None
    return [task.result() for task in tasks]
