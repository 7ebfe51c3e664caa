"""Calibration: measure how often the judge changes its answer when asked the same again.

A seeded sample of (artifact, question) cells is asked ``repeats`` times, each time as a new
re-ask variant (reworded, choices reordered, sampled afresh), exactly as ``canon check``
confirms. A cell's flip rate is the share of its answers that differ from its majority
answer; rates are pooled per question and per question kind, with Wilson intervals, and the
upper bound of the worst kind becomes the recommended ``flip_rate`` for the check.

Two stability measures separate what moves the answers, each asked as a first ask is (so a
judge at temperature 0 shows only what the change itself does): *paraphrase* stability asks
each cell in every wording of its question with the choices in the rubric's order, *order*
stability asks its own wording with the choices in up to three orders.

A judge that answers a whole response in one call (a decision model) is asked as the check
asks it: one call per sampled artifact carries every wording of its sampled questions
(``canon.check.runner.response_requests``) and, in the same call, their first wording in up
to three choice orders. A deterministic judge (a decision model, an LLM at temperature 0)
gives an identical request the identical answer and the check never re-asks it: no re-ask is
sent, no flip rate is reported or recommended, and what is measured is how its answers move
across wordings and orders.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from canon.check.runner import DEFAULT_CONCURRENCY, ScoringPlan, response_requests, wordings
from canon.core.artifact import Artifact
from canon.core.evidence import DEFAULT_FLIP_RATE
from canon.core.prompt import choice_order
from canon.core.rubric import Question
from canon.core.scoring import Answer
from canon.core.stats import wilson_ci
from canon.core.usage import Usage, UsageSummary, summarize
from canon.errors import JudgeError, JudgeScriptError, JudgeUnavailableError, UsageError
from canon.judge.base import JudgeRequest, ResponseJudge, is_deterministic, response_judge

MAX_SENSIBLE_FLIP_RATE = 0.3  # beyond this, re-asking costs more than a better judge
ORDERS = 3  # choice orders asked for order stability (the gate has only two)


@dataclass(frozen=True, slots=True)
class FlipTally:
    """Answers that differed from their cell's majority, out of all answers."""

    flips: int
    answers: int

    @property
    def rate(self) -> float | None:
        """The observed flip rate."""
        return self.flips / self.answers if self.answers else None

    @property
    def interval(self) -> tuple[float, float]:
        """The 95 % Wilson interval of the flip rate."""
        return wilson_ci(self.flips, self.answers)


@dataclass(frozen=True, slots=True)
class Calibration:
    """What the judge's repeated answers showed."""

    cells: int
    repeats: int
    failed: int  # answers the judge could not give
    by_kind: dict[str, FlipTally]
    by_question: dict[str, FlipTally]
    # Per question kind: answers across the question's wordings, and across choice orders.
    paraphrase: dict[str, FlipTally] = dataclasses.field(default_factory=dict)
    order: dict[str, FlipTally] = dataclasses.field(default_factory=dict)
    usage: UsageSummary = dataclasses.field(default_factory=UsageSummary)  # what was spent
    # Of ``failed``, the answers an unavailable judge (an outage, not a refusal) left out, and
    # the first such failure's message.
    unavailable: int = 0
    first_unavailable: str | None = None
    # The judge answers an identical request identically: no re-ask was sent (it would
    # repeat the first answer), so ``by_kind`` is empty and nothing is recommended.
    deterministic: bool = False

    @property
    def recommended_flip_rate(self) -> float | None:
        """The flip_rate setting to use: the worst kind's upper bound, rounded up; None for a
        deterministic judge, whose re-asks measure nothing."""
        if self.deterministic:
            return None
        uppers = [t.interval[1] for t in self.by_kind.values() if t.answers]
        if not uppers:
            return DEFAULT_FLIP_RATE
        return min(0.45, max(0.05, math.ceil(max(uppers) * 20) / 20))

    @property
    def advice(self) -> str:
        """What to do with the measurement, in one sentence."""
        rate = self.recommended_flip_rate
        if rate is None:
            return (
                "this judge is deterministic (an identical request gets the identical answer), "
                "so re-asking it measures nothing and no flip_rate is recommended; the "
                "stability above is what varies its answers, and a misreading every wording "
                "shares does not show there: judge replicates (the check measures the "
                "misreading rate across responses) or set a confirm_judge"
            )
        smallest = min((t.answers for t in self.by_kind.values()), default=0)
        if smallest < 60:
            return (
                f"too few answers for a tight bound (the smallest kind has {smallest}); "
                "raise --cells or --repeats before changing flip_rate"
            )
        if rate > MAX_SENSIBLE_FLIP_RATE:
            return (
                f"this judge changes its answers often (flip_rate {rate:.2f}): confirmations "
                "will need many re-asks; prefer a stronger judge, judge_options samples: 5, "
                "or logprobs"
            )
        if rate <= DEFAULT_FLIP_RATE:
            return (
                f"the default flip_rate {DEFAULT_FLIP_RATE} covers this judge; set "
                f"flip_rate: {rate:.2f} in canon.yaml for cheaper confirmations"
            )
        return f"set flip_rate: {rate:.2f} in canon.yaml so the check's error control holds"


@dataclass(frozen=True, slots=True)
class CalibrationCell:
    """One sampled (artifact, question) cell and every request calibration asks about it."""

    artifact: Artifact
    question: Question  # the rubric's question: its kind and id pool the tallies
    repeats: tuple[JudgeRequest, ...]  # fresh re-ask variants 1..repeats
    reworded: tuple[JudgeRequest, ...]  # first-ask settings, one per wording
    reordered: tuple[JudgeRequest, ...]  # first-ask settings, one per choice order

    @property
    def requests(self) -> tuple[JudgeRequest, ...]:
        """Everything asked about this cell, in the order it is asked."""
        return self.repeats + self.reworded + self.reordered


def calibration_cells(
    plan: ScoringPlan,
    artifacts: Sequence[Artifact],
    *,
    cells: int = 40,
    repeats: int = 5,
    seed: int = 0,
) -> tuple[CalibrationCell, ...]:
    """The seeded sample of cells and the requests calibration sends about each: what the
    run asks, and what ``--estimate`` counts and prices (one list, built once)."""
    if repeats < 2:
        raise UsageError(f"calibration needs at least 2 repeats per cell, got {repeats}")
    if cells < 1:
        raise UsageError(f"calibration needs at least 1 cell, got {cells}")
    if not artifacts:
        raise UsageError("calibration needs at least one artifact in the suite")
    pairs = [(a, q) for a in artifacts for q in plan.questions]
    chosen = random.Random(seed).sample(pairs, min(cells, len(pairs)))
    # A deterministic judge's re-asks would tell nothing the wordings and orders do not.
    again = 0 if is_deterministic(plan.judge) else repeats
    if response_judge(plan.judge) is not None:
        # Asked as the check asks it: every wording (each in its own choice order), and the
        # first wording in other orders.
        return tuple(
            CalibrationCell(
                artifact,
                question,
                tuple(plan.request(artifact, question, v) for v in range(1, again + 1)),
                tuple(response_requests(plan, artifact, [question])),
                tuple(
                    plan.request(artifact, question, v)
                    for v in _variants_with_new_orders(question, wordings(question))[:ORDERS]
                ),
            )
            for artifact, question in chosen
        )

    def request(artifact: Artifact, question: Question, variant: int) -> JudgeRequest:
        return JudgeRequest(
            question, artifact, plan.constitution, plan.rubric.instructions, variant
        )

    # The first ask's conditions (variant 0), with only the wording or the order changed.
    return tuple(
        CalibrationCell(
            artifact,
            question,
            tuple(request(artifact, question, v) for v in range(1, again + 1)),
            tuple(request(artifact, p, 0) for p in paraphrases(question)),
            tuple(request(artifact, p, 0) for p in reorderings(question)),
        )
        for artifact, question in chosen
    )


CellProgress = Callable[[int, int, CalibrationCell], None]


async def calibrate(
    plan: ScoringPlan,
    artifacts: Sequence[Artifact],
    *,
    cells: int = 40,
    repeats: int = 5,
    seed: int = 0,
    concurrency: int = DEFAULT_CONCURRENCY,
    on_cell: CellProgress | None = None,
) -> Calibration:
    """Ask a sample of cells ``repeats`` times and tally how often the answers differ;
    ``on_cell(done, total, cell)`` is told as each cell's last answer arrives."""
    sampled = calibration_cells(plan, artifacts, cells=cells, repeats=repeats, seed=seed)
    return await ask_sample(plan, sampled, concurrency=concurrency, on_cell=on_cell)


def response_calls(
    sampled: Sequence[CalibrationCell],
) -> list[tuple[tuple[int, ...], tuple[JudgeRequest, ...]]]:
    """For a judge that answers a whole response in one call: per sampled artifact, the
    cells one call answers (their places in ``sampled``) and that call's requests, every
    (question, variant) of those cells' wordings and orders once."""
    groups: dict[str, list[int]] = {}
    for index, cell in enumerate(sampled):
        groups.setdefault(cell.artifact.key, []).append(index)
    calls: list[tuple[tuple[int, ...], tuple[JudgeRequest, ...]]] = []
    for indices in groups.values():
        asked: dict[tuple[str, int], JudgeRequest] = {}
        for index in indices:
            for request in sampled[index].reworded + sampled[index].reordered:
                asked.setdefault((request.question.id, request.variant), request)
        calls.append((tuple(indices), tuple(asked.values())))
    return calls


def sent_requests(plan: ScoringPlan, sampled: Sequence[CalibrationCell]) -> list[JudgeRequest]:
    """Every request calibration sends (what ``--estimate`` prices and the budget holds)."""
    if response_judge(plan.judge) is None:
        return [request for cell in sampled for request in cell.requests]
    calls = [request for _cells, asked in response_calls(sampled) for request in asked]
    return [request for cell in sampled for request in cell.repeats] + calls


async def ask_sample(
    plan: ScoringPlan,
    sampled: Sequence[CalibrationCell],
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    on_cell: CellProgress | None = None,
) -> Calibration:
    """Send each cell's requests (``calibration_cells``) and tally the answers: one at a
    time, or one call per artifact to a judge that answers a whole response at once."""
    limiter = asyncio.Semaphore(max(1, concurrency))
    spent: list[tuple[str, Usage | None]] = []
    outages: list[str] = []
    done = 0

    def failed(kind: str, exc: JudgeError, answers: int = 1) -> None:
        if exc.usage is not None:  # a failed answer still pays for its attempts
            spent.append((kind, exc.usage))
        if isinstance(exc, JudgeUnavailableError):
            outages.extend([str(exc)] * answers)

    async def ask(request: JudgeRequest) -> str | None:
        kind = request.question.kind
        async with limiter:
            try:
                answer = await plan.judge.answer(request)
            except JudgeScriptError:
                raise
            except JudgeError as exc:
                failed(kind, exc)
                return None
        spent.append((kind, answer.usage))
        return _modal(answer.distribution)

    def told(cell: CalibrationCell) -> None:
        nonlocal done
        done += 1
        if on_cell is not None:
            on_cell(done, len(sampled), cell)

    async def ask_cell(cell: CalibrationCell) -> list[str | None]:
        labels = await asyncio.gather(*(ask(r) for r in cell.requests))
        told(cell)
        return list(labels)

    async def ask_call(
        judge: ResponseJudge, cells: Sequence[CalibrationCell], asked: Sequence[JudgeRequest]
    ) -> list[list[str | None]]:
        # One call answers every wording and order of these cells; their re-asks (a judge
        # that is not deterministic only) then go one at a time, as the check's do.
        kind = asked[0].question.kind
        labels: dict[tuple[str, int], str | None] = {}
        async with limiter:
            try:
                answers = await judge.answer_all(asked)
            except JudgeScriptError:
                raise
            except JudgeError as exc:
                # every answer these cells were to get from the call (as the tallies count them)
                failed(kind, exc, sum(len(c.reworded) + len(c.reordered) for c in cells))
                answers = None
        if answers is not None:
            spent.append((kind, answers.usage))
            for index, request in enumerate(asked):
                outcome = answers.outcomes.get(index)
                key = (request.question.id, request.variant)
                labels[key] = (
                    None if not isinstance(outcome, Answer) else _modal(outcome.distribution)
                )
        repeated = [await asyncio.gather(*(ask(r) for r in c.repeats)) for c in cells]
        found: list[list[str | None]] = []
        for cell, first in zip(cells, repeated, strict=True):
            later = cell.reworded + cell.reordered
            found.append([*first, *(labels.get((r.question.id, r.variant)) for r in later)])
            told(cell)
        return found

    whole = response_judge(plan.judge)
    if whole is None:
        answered = list(await asyncio.gather(*(ask_cell(cell) for cell in sampled)))
    else:
        calls = response_calls(sampled)
        results = await asyncio.gather(
            *(ask_call(whole, [sampled[i] for i in cells], asked) for cells, asked in calls)
        )
        answered = [[] for _ in sampled]
        for (cells, _asked), labels in zip(calls, results, strict=True):
            for index, found in zip(cells, labels, strict=True):
                answered[index] = found
    chosen = [(cell.artifact, cell.question) for cell in sampled]
    split = [_split(cell, labels) for cell, labels in zip(sampled, answered, strict=True)]
    by_kind: dict[str, list[int]] = {}
    by_question: dict[str, list[int]] = {}
    failed_answers = _tally(chosen, [s[0] for s in split], (by_kind, by_question))
    paraphrase: dict[str, list[int]] = {}
    order: dict[str, list[int]] = {}
    failed_answers += _tally(chosen, [s[1] for s in split], (paraphrase,))
    failed_answers += _tally(chosen, [s[2] for s in split], (order,))
    return Calibration(
        cells=len(sampled),
        repeats=len(sampled[0].repeats) if sampled else 0,
        failed=failed_answers,
        by_kind={k: FlipTally(*v) for k, v in sorted(by_kind.items())},
        by_question={k: FlipTally(*v) for k, v in by_question.items()},
        paraphrase={k: FlipTally(*v) for k, v in sorted(paraphrase.items())},
        order={k: FlipTally(*v) for k, v in sorted(order.items())},
        usage=summarize(spent),
        unavailable=len(outages),
        first_unavailable=outages[0] if outages else None,
        deterministic=is_deterministic(plan.judge),
    )


def _modal(distribution: Mapping[str, float]) -> str:
    """The label an answer puts the most mass on (the first in sorted order on a tie)."""
    return max(sorted(distribution), key=lambda label: distribution[label])


def _split(
    cell: CalibrationCell, labels: Sequence[str | None]
) -> tuple[Sequence[str | None], Sequence[str | None], Sequence[str | None]]:
    """A cell's answers cut back into its re-asks, its wordings and its orders."""
    first, second = len(cell.repeats), len(cell.repeats) + len(cell.reworded)
    return labels[:first], labels[first:second], labels[second:]


def paraphrases(question: Question) -> list[Question]:
    """The question in each of its wordings, the choices in the rubric's order."""
    texts = [question.text, *question.wordings]
    return [
        dataclasses.replace(question, text=t, wordings=(), base_text=question.text) for t in texts
    ]


def reorderings(question: Question) -> list[Question]:
    """The question in its own wording, with its choices in up to ``ORDERS`` orders."""
    return [
        dataclasses.replace(question, choices=choice_order(question, v), wordings=())
        for v in _variants_with_new_orders(question)[:ORDERS]
    ]


def _variants_with_new_orders(question: Question, step: int = 1) -> list[int]:
    # Every ``step``-th variant: with the number of wordings, each asks the first wording.
    seen: list[tuple[str, ...]] = []
    found: list[int] = []
    for variant in range(0, 2 * len(question.choices) * step, step):
        labels = tuple(c.label for c in choice_order(question, variant))
        if labels not in seen:
            seen.append(labels)
            found.append(variant)
    return found


def _tally(
    chosen: Sequence[tuple[Artifact, Question]],
    answers: Sequence[Sequence[str | None]],
    tables: Sequence[dict[str, list[int]]],
) -> int:
    """Add each cell's answers that differ from its majority; return the failed answers."""
    failed = 0
    for (_artifact, question), labels in zip(chosen, answers, strict=True):
        given = [label for label in labels if label is not None]
        failed += len(labels) - len(given)
        if len(given) < 2:
            continue
        majority = max(sorted(set(given)), key=given.count)
        flips = sum(label != majority for label in given)
        for table, key in zip(tables, (question.kind, question.id), strict=False):
            tally = table.setdefault(key, [0, 0])
            tally[0] += flips
            tally[1] += len(given)
    return failed
