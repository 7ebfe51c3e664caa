"""Confirmation: re-ask the judge about the cells a failing decision hangs on, and no others.

After the first pass, each artifact's would-be failures are found (a tripped NSCP gate, a
flip from a solidly satisfied baseline answer, a score below the threshold) and the cells
behind them are re-asked one variant at a time until their evidence decides
(``canon.core.evidence``). Verdicts are then settled on pooled answers, failing only on
confirmed evidence (``canon.core.settle``). Re-asks are independent looks: each is a new
variant of the prompt, sampled afresh, with its own cache key.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from canon.check.runner import DEFAULT_CONCURRENCY, ScoringPlan
from canon.core.artifact import Artifact
from canon.core.baseline import ArtifactRecord, Baseline, recorded_question
from canon.core.evidence import DecisionRule, Evidence, add_answer, failed_reask, open_evidence
from canon.core.scoring import Answer, ArtifactResult, Cell, score_cell, unscored_cell
from canon.core.settle import (
    gate_suspects,
    settle,
    solidly_satisfied,
    threshold_suspects,
    upper_bound,
    violated,
    violation_suspects,
)
from canon.core.usage import Usage, total
from canon.errors import JudgeError, JudgeScriptError
from canon.judge.base import JudgeRequest
from canon.judge.concurrency import AdaptiveLimiter

CellKey = tuple[str, str]  # (artifact key, question id)


@dataclass(frozen=True, slots=True)
class Confirmation:
    """Settled results and the evidence gathered for them."""

    results: tuple[ArtifactResult, ...]
    evidence: Mapping[CellKey, Evidence]
    cells: int  # cells in the run, over which the false-alarm budget was split
    reasks: int  # judge calls spent on confirmation
    disagreements: int  # re-asks whose answer differed from the cell's majority answer

    @property
    def disagreement_rate(self) -> float | None:
        """The share of re-asks that differed from their cell's majority answer."""
        return self.disagreements / self.reasks if self.reasks else None


def flip_suspects(result: ArtifactResult, record: ArtifactRecord | None) -> tuple[str, ...]:
    """Questions solidly satisfied in the baseline that now read as violated."""
    if record is None or record.questions is None:
        return ()
    found: list[str] = []
    for cell in result.cells:
        before = recorded_question(record, cell.question)
        if (
            before is not None
            and before.state == "answered"
            and before.subject == cell.question.subject
            and cell.state == "answered"
            and solidly_satisfied(before.score, before.confidence)
            and violated(cell.score)
        ):
            found.append(cell.id)
    return tuple(found)


async def confirm(
    plan: ScoringPlan,
    artifacts: Sequence[Artifact],
    results: Sequence[ArtifactResult],
    rule: DecisionRule,
    *,
    baseline: Baseline | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    budget_cells: int | None = None,
    limiter: AdaptiveLimiter | None = None,
) -> Confirmation:
    """Confirm or clear every would-be failure of a scored run.

    The run's false-alarm budget is split over its cells, or over ``budget_cells`` when
    the run is one part of a larger whole (a pytest session checking one artifact a test).
    """
    cells = max(budget_cells or 0, sum(len(r.cells) for r in results))
    # The scoring run's limiter, when given: what it learned of the judge's capacity (and a
    # tripped outage breaker) carries over to the re-asks.
    limiter = limiter or AdaptiveLimiter(concurrency)
    by_key = {a.key: a for a in artifacts}
    records = baseline.artifacts if baseline is not None else {}
    settled = await asyncio.gather(
        *(
            _ArtifactConfirmation(plan, by_key[r.key], r, rule, cells, limiter).run(
                records.get(r.key)
            )
            if r.key in by_key and r.stopped_by is None and r.cells
            else _unchanged(r)
            for r in results
        )
    )
    evidence: dict[CellKey, Evidence] = {}
    reasks = disagreements = 0
    for outcome in settled:
        evidence.update(outcome.evidence)
        reasks += outcome.reasks
        disagreements += outcome.disagreements
    return Confirmation(
        results=tuple(o.result for o in settled),
        evidence=evidence,
        cells=cells,
        reasks=reasks,
        disagreements=disagreements,
    )


@dataclass(frozen=True, slots=True)
class _Settled:
    result: ArtifactResult
    evidence: Mapping[CellKey, Evidence]
    reasks: int
    disagreements: int


async def _unchanged(result: ArtifactResult) -> _Settled:
    return _Settled(result, {}, 0, 0)


class _ArtifactConfirmation:
    """The re-asking for one artifact: its suspects, their answers, their evidence."""

    def __init__(
        self,
        plan: ScoringPlan,
        artifact: Artifact,
        result: ArtifactResult,
        rule: DecisionRule,
        cells: int,
        limiter: AdaptiveLimiter,
    ) -> None:
        self.plan = plan
        self.artifact = artifact
        self.result = result
        self.rule = rule
        self.cells = cells
        self.limiter = limiter
        self.answers: dict[str, list[Mapping[str, float]]] = {
            c.id: [dict(c.distribution)] for c in result.cells if c.state != "unscored"
        }
        self.evidence: dict[str, Evidence] = {}
        self.failed: dict[str, str] = {}
        self.spent: list[Usage] = []  # what the re-asks cost, failed ones included

    async def run(self, record: ArtifactRecord | None) -> _Settled:
        """Test the gate and flips, then the threshold, and settle the verdict."""
        decisive = [*gate_suspects(self.result), *violation_suspects(self.result)]
        first = [*decisive, *flip_suspects(self.result, record)]
        await asyncio.gather(*(self._test(q) for q in dict.fromkeys(first)))
        if not any(self.evidence[q].status == "confirmed" for q in decisive):
            await self._test_threshold()
        pooled = self._pooled()
        settled = settle(self.result, pooled, self.evidence)
        if self.spent:
            settled = dataclasses.replace(settled, reask_usage=total(self.spent))
        reasks = sum(len(a) - 1 for q, a in self.answers.items() if q in self.evidence)
        disagreements = sum(self._disagreements(q) for q in self.evidence)
        key = self.result.key
        return _Settled(
            settled, {(key, q): e for q, e in self.evidence.items()}, reasks, disagreements
        )

    async def _test_threshold(self) -> None:
        # Test the cells holding the score down, most harmful first, until the bound on the
        # best possible score falls below the threshold (confirmed) or no untested cell
        # could take it there (cleared).
        threshold = self.result.threshold
        suspects = threshold_suspects(self.result)
        for qid in suspects:
            if qid in self.evidence:
                continue  # already tested for the gate or a flip
            pooled = self._pooled()
            score = _score(pooled)
            if score is None or score >= threshold:
                return
            bound = upper_bound(pooled, self.evidence)
            if bound is not None and bound < threshold:
                return
            untested = frozenset(q for q in suspects if q not in self.evidence)
            floor = upper_bound(pooled, self.evidence, untested)
            if floor is None or floor >= threshold:
                return
            await self._test(qid)

    async def _test(self, qid: str) -> None:
        cell = self.result.cell(qid)
        evidence = open_evidence(cell.question, dict(cell.distribution), self.rule, self.cells)
        while evidence.status == "open" and evidence.reasks < self.rule.max_reasks:
            answer = await self._ask(cell, variant=evidence.asks)
            if isinstance(answer, str):
                self.failed[qid] = answer
                evidence = failed_reask(evidence)
                break
            self.answers[qid].append(dict(answer.distribution))
            evidence = add_answer(evidence, answer.distribution, self.rule, self.cells)
        self.evidence[qid] = evidence

    async def _ask(self, cell: Cell, *, variant: int) -> Answer | str:
        request = JudgeRequest(
            cell.question,
            self.artifact,
            self.plan.constitution,
            self.plan.rubric.instructions,
            variant,
        )
        try:
            async with self.limiter:  # a tripped breaker raises here: the re-ask failed
                answer = await self.plan.judge.answer(request)
            if answer.usage is not None:
                self.spent.append(answer.usage)
            score_cell(cell.question, answer)  # refuse a reply the cell could not hold
        except JudgeScriptError:
            raise  # a mis-scripted test must fail loudly
        except JudgeError as exc:
            if exc.usage is not None:
                self.spent.append(exc.usage)
            return str(exc)
        return answer

    def _pooled(self) -> tuple[Cell, ...]:
        pooled: list[Cell] = []
        for cell in self.result.cells:
            answers = self.answers.get(cell.id)
            if cell.state == "unscored" or answers is None or len(answers) == 1:
                pooled.append(cell)
                continue
            mixed: dict[str, float] = {}
            for answer in answers:
                total = sum(answer.values())
                for label, mass in answer.items():
                    mixed[label] = mixed.get(label, 0.0) + mass / total / len(answers)
            try:
                # the first ask's usage stays with the cell; the re-asks' is the artifact's
                pooled_answer = Answer(mixed, cell.rationale, usage=cell.usage)
                pooled.append(score_cell(cell.question, pooled_answer))
            except JudgeError as exc:
                pooled.append(unscored_cell(cell.question, str(exc), error_type=type(exc).__name__))
        return tuple(pooled)

    def _disagreements(self, qid: str) -> int:
        answers = self.answers[qid][1:]
        if not answers:
            return 0
        majority = _majority(self.answers[qid])
        return sum(1 for a in answers if _modal(a) != majority)


def _score(cells: Sequence[Cell]) -> float | None:
    scores = [c.score for c in cells if c.state == "answered" and c.score is not None]
    return sum(scores) / len(scores) if scores else None


def _modal(answer: Mapping[str, float]) -> str:
    return max(sorted(answer), key=lambda label: answer[label])


def _majority(answers: Sequence[Mapping[str, float]]) -> str:
    votes: dict[str, int] = {}
    for answer in answers:
        label = _modal(answer)
        votes[label] = votes.get(label, 0) + 1
    return max(sorted(votes), key=lambda label: votes[label])
