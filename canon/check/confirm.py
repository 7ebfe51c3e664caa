"""Confirmation: re-ask the judge about the cells a failing decision hangs on, and no others.

After the first pass, some cells get a planned second look (variant 1): every cell when
the run is recorded as a baseline, so a baseline answer is never one draw; the gate
question of every new or changed artifact when the run is checked, so a contradiction whose
first answer passed still has a chance to show. Then each artifact's would-be failures are
found (a tripped or materially suspected NSCP gate, a principle at its worst choice, a flip
from a solidly satisfied baseline answer, a score below the threshold) and the cells behind
them are re-asked one variant at a time until their evidence decides
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
from canon.check.variants import describe_variant, replicate_for
from canon.core.artifact import Artifact
from canon.core.baseline import ArtifactRecord, Baseline, record_for, recorded_question
from canon.core.evidence import (
    DecisionRule,
    Evidence,
    add_answer,
    failed_reask,
    mass_on,
    open_evidence_from,
)
from canon.core.rubric import Question
from canon.core.scoring import (
    Answer,
    ArtifactResult,
    Cell,
    judge_verdict,
    refused_cell,
    score_cell,
    unscored_cell,
)
from canon.core.settle import (
    gate_suspects,
    settle,
    solidly_satisfied,
    threshold_suspects,
    upper_bound,
    violated,
    violation_suspects,
    worst_labels,
)
from canon.core.usage import Usage, total
from canon.errors import JudgeError, JudgeRefusedError, JudgeScriptError
from canon.judge.concurrency import AdaptiveLimiter

CellKey = tuple[str, str]  # (artifact key, question id)


@dataclass(frozen=True, slots=True)
class Confirmation:
    """Settled results and the evidence gathered for them."""

    results: tuple[ArtifactResult, ...]
    evidence: Mapping[CellKey, Evidence]
    cells: int  # cells in the run, over which the false-alarm budget was split
    reasks: int  # judge calls after the first pass: second looks and confirmation re-asks
    disagreements: int  # re-asks whose answer differed from the cell's majority answer
    asks: Mapping[CellKey, int] = dataclasses.field(default_factory=dict)  # answers per cell
    # Per cell, the re-asks that agreed with its first low answer: which wording, choice
    # order (and judge) each used, so a report can say what confirmed a flip.
    variations: Mapping[CellKey, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    # Per artifact with replicates, how many responses its first answers pooled.
    replicates: Mapping[str, int] = dataclasses.field(default_factory=dict)
    # Per artifact that answers a request (``input``), the digest of that request.
    inputs: Mapping[str, str] = dataclasses.field(default_factory=dict)

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
    record: bool = False,
) -> Confirmation:
    """Confirm or clear every would-be failure of a scored run.

    The run's false-alarm budget is split over its cells, or over ``budget_cells`` when
    the run is one part of a larger whole (a pytest session checking one artifact a test).
    ``record`` gives every cell a second look (a run about to become a baseline); with a
    ``baseline``, the gate question of each new or changed artifact gets one.
    """
    cells = max(budget_cells or 0, sum(len(r.cells) for r in results))
    # The scoring run's limiter, when given: what it learned of the judge's capacity (and a
    # tripped outage breaker) carries over to the re-asks.
    limiter = limiter or AdaptiveLimiter(concurrency)
    by_key = {a.key: a for a in artifacts}

    def compared(key: str) -> ArtifactRecord | None:
        # the record a flip is judged against: none when the artifact answers another input
        if baseline is None:
            return None
        return record_for(baseline, key, by_key[key].input_digest)

    settled = await asyncio.gather(
        *(
            _ArtifactConfirmation(plan, by_key[r.key], r, rule, cells, limiter).run(
                compared(r.key),
                second_looks(r, compared(r.key), record, baseline, plan.constitution.digest),
                checking=baseline is not None and not record,
            )
            if r.key in by_key and r.stopped_by is None and r.cells
            else _unchanged(r)
            for r in results
        )
    )
    evidence: dict[CellKey, Evidence] = {}
    asks: dict[CellKey, int] = {}
    variations: dict[CellKey, tuple[str, ...]] = {}
    reasks = disagreements = 0
    for outcome in settled:
        evidence.update(outcome.evidence)
        asks.update(outcome.asks)
        variations.update(outcome.variations)
        reasks += outcome.reasks
        disagreements += outcome.disagreements
    return Confirmation(
        results=tuple(o.result for o in settled),
        evidence=evidence,
        cells=cells,
        reasks=reasks,
        disagreements=disagreements,
        asks=asks,
        variations=variations,
        replicates={a.key: len(a.texts) for a in artifacts if a.replicates},
        inputs={a.key: a.input_digest for a in artifacts if a.input_digest is not None},
    )


def merge_confirmations(parts: Sequence[Confirmation], cells: int) -> Confirmation:
    """One run's confirmation from its artifacts' own, in order (each confirmed with the
    run's false-alarm budget split over ``cells``)."""
    evidence: dict[CellKey, Evidence] = {}
    asks: dict[CellKey, int] = {}
    variations: dict[CellKey, tuple[str, ...]] = {}
    replicates: dict[str, int] = {}
    inputs: dict[str, str] = {}
    for part in parts:
        evidence.update(part.evidence)
        asks.update(part.asks)
        variations.update(part.variations)
        replicates.update(part.replicates)
        inputs.update(part.inputs)
    return Confirmation(
        results=tuple(r for part in parts for r in part.results),
        evidence=evidence,
        cells=cells,
        reasks=sum(part.reasks for part in parts),
        disagreements=sum(part.disagreements for part in parts),
        asks=asks,
        variations=variations,
        replicates=replicates,
        inputs=inputs,
    )


def second_looks(
    result: ArtifactResult,
    record: ArtifactRecord | None,
    recording: bool,
    baseline: Baseline | None,
    plan_constitution: str | None = None,
) -> frozenset[str]:
    """The cells asked a second time before any decision (see the module docstring)."""
    answered = [c.question for c in result.cells if c.state != "unscored"]
    return looked_twice(
        answered,
        digest=result.digest,
        record=record,
        recording=recording,
        baseline=baseline,
        constitution=plan_constitution,
    )


def looked_twice(
    questions: Sequence[Question],
    *,
    digest: str | None,
    record: ArtifactRecord | None,
    recording: bool,
    baseline: Baseline | None,
    constitution: str | None,
) -> frozenset[str]:
    """Which of an artifact's questions get a planned second look: every one when the run
    is recorded; in a check, the gate question of an artifact whose text is new or changed,
    or of any artifact when the constitution changed since the baseline (an identical text
    cannot regress on the judge's say-so alone, canon.core.compare, but under another
    constitution no text is unchanged). The estimate plans with this too."""
    if recording:
        return frozenset(q.id for q in questions)
    if baseline is None:
        return frozenset()
    same_yardstick = baseline.constitution in (None, constitution)
    if (
        same_yardstick
        and record is not None
        and record.digest is not None
        and record.digest == digest
    ):
        return frozenset()
    return frozenset(q.id for q in questions if q.kind == "gate")


@dataclass(frozen=True, slots=True)
class _Settled:
    result: ArtifactResult
    evidence: Mapping[CellKey, Evidence]
    reasks: int
    disagreements: int
    asks: Mapping[CellKey, int]
    variations: Mapping[CellKey, tuple[str, ...]] = dataclasses.field(default_factory=dict)


async def _unchanged(result: ArtifactResult) -> _Settled:
    return _Settled(result, {}, 0, 0, {})


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
        # Questions the judge refused to judge on a re-ask or second look: a refusal is its
        # own outcome there too (the cell is refused), never a failed re-ask read as an outage.
        self.refused: dict[str, str] = {}
        self.spent: list[Usage] = []  # what the re-asks cost, failed ones included
        self.agreeing: dict[str, list[str]] = {}  # per cell, the variations that agreed

    async def run(
        self,
        record: ArtifactRecord | None,
        second: frozenset[str] = frozenset(),
        *,
        checking: bool = False,
    ) -> _Settled:
        """Take the planned second looks, test the gate, violations and flips, then the
        threshold, and settle the verdict."""
        if second:
            await asyncio.gather(*(self._look(q) for q in sorted(second)))
            # Suspects are found on the pooled looks, as the baseline records them.
            looked = self.result
            self.result = dataclasses.replace(
                judge_verdict(looked.key, self._pooled(), looked.threshold, looked.gates),
                digest=looked.digest,
            )
        # Minority failing mass is worth re-asks only where a regression can come from: a new
        # or changed artifact in a check (the ones given a second look there).
        material = checking and bool(second)
        violations = violation_suspects(self.result, material)
        decisive = [*gate_suspects(self.result, material), *violations]
        first = [*decisive, *flip_suspects(self.result, record)]
        await asyncio.gather(
            *(
                self._test(q, worst_labels(self.result.cell(q)) if q in violations else None)
                for q in dict.fromkeys(first)
            )
        )
        if not any(self.evidence[q].status == "confirmed" for q in decisive):
            await self._test_threshold()
        pooled = self._pooled()
        settled = settle(self.result, pooled, self.evidence)
        if self.spent:
            settled = dataclasses.replace(settled, reask_usage=total(self.spent))
        reasks = sum(len(a) - 1 for a in self.answers.values())
        disagreements = sum(self._disagreements(q) for q in self.answers)
        key = self.result.key
        return _Settled(
            settled,
            {(key, q): e for q, e in self.evidence.items()},
            reasks,
            disagreements,
            {(key, q): len(a) for q, a in self.answers.items()},
            {(key, q): tuple(v) for q, v in self.agreeing.items() if v},
        )

    async def _look(self, qid: str) -> None:
        # A planned second answer; a failed one leaves the cell with its first answer only.
        cell = self.result.cell(qid)
        if qid not in self.answers:
            return
        answer = await self._ask(cell, variant=len(self.answers[qid]))
        if not isinstance(answer, str):
            self.answers[qid].append(dict(answer.distribution))

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

    async def _test(self, qid: str, labels: frozenset[str] | None = None) -> None:
        cell = self.result.cell(qid)
        evidence = open_evidence_from(
            cell.question, self.answers[qid], self.rule, self.cells, labels
        )
        tally = [[0, 0] for _ in self.artifact.texts]  # per response: agreed, disagreed
        while (
            evidence.status == "open"
            # with replicates, a claim is not settled before every response was re-asked
            or (
                evidence.status == "confirmed"
                and len(tally) > 1
                and any(a + d == 0 for a, d in tally)
            )
        ) and evidence.reasks < self.rule.max_reasks:
            variant = evidence.asks
            answer = await self._ask(cell, variant=variant)
            if isinstance(answer, str):
                self.failed[qid] = answer
                evidence = failed_reask(evidence)
                break
            self.answers[qid].append(dict(answer.distribution))
            agrees = mass_on(evidence.labels, answer.distribution) > 0.5
            shown = replicate_for(variant, len(self.artifact.texts))
            tally[shown][0 if agrees else 1] += 1
            if agrees:
                second = self.plan.confirm_judge
                self.agreeing.setdefault(qid, []).append(
                    describe_variant(
                        cell.question,
                        variant,
                        None if second is None else second.name,
                        len(self.artifact.texts),
                    )
                )
            evidence = add_answer(evidence, answer.distribution, self.rule, self.cells)
        if evidence.status == "confirmed" and len(tally) > 1 and any(a <= d for a, d in tally):
            # A misreading sticks to one text, so with replicates the response, not the ask,
            # is the unit of evidence: a claim stands only when the re-asks of every response
            # bear it out. Split responses leave the question undecided, never failed.
            evidence = dataclasses.replace(evidence, status="open")
        self.evidence[qid] = evidence

    async def _ask(self, cell: Cell, *, variant: int) -> Answer | str:
        # With replicates each re-ask shows another response: a misreading that sticks to one
        # text is then outvoted by the others instead of repeating itself.
        shown = self.artifact.replicate(replicate_for(variant, len(self.artifact.texts)))
        request = self.plan.request(shown, cell.question, variant)
        judge = self.plan.judge_for(variant)
        try:
            async with self.limiter:  # a tripped breaker raises here: the re-ask failed
                answer = await judge.answer(request)
            if answer.usage is not None:
                self.spent.append(answer.usage)
            score_cell(cell.question, answer)  # refuse a reply the cell could not hold
        except JudgeScriptError:
            raise  # a mis-scripted test must fail loudly
        except JudgeError as exc:
            if exc.usage is not None:
                self.spent.append(exc.usage)
            if isinstance(exc, JudgeRefusedError):
                self.refused.setdefault(cell.id, str(exc))
            return str(exc)
        return answer

    def _pooled(self) -> tuple[Cell, ...]:
        pooled: list[Cell] = []
        for cell in self.result.cells:
            answers = self.answers.get(cell.id)
            if cell.id in self.refused and cell.state != "unscored":
                pooled.append(refused_cell(cell.question, self.refused[cell.id], cell.usage))
                continue
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
        count = len(self.artifact.texts)
        if count == 1:
            return sum(1 for a in answers if _modal(a) != majority)
        # Two responses may truly differ: a re-ask is judge noise only against the other
        # answers about its own response (or the cell's majority when it is that one's only).
        groups: dict[int, list[Mapping[str, float]]] = {}
        for variant, answer in enumerate(answers, 1):
            groups.setdefault(replicate_for(variant, count), []).append(answer)
        return sum(
            sum(1 for a in group if _modal(a) != (_majority(group) if len(group) > 1 else majority))
            for group in groups.values()
        )


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
