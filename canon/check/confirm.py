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

A deterministic judge (``canon.judge.base.is_deterministic``) is never re-asked what it
answered: its answers about one response (every wording the first pass asked) are one
unit of evidence, tested at the misreading rate the run measured across responses (or the
rule's flip rate with one response). A claim on its answers is confirmed by other responses
(replicates) and by a ``confirm_judge``, which is asked only about the cells a failing
verdict hangs on, and whose reason is then the one reported for the cell.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from canon.check.runner import DEFAULT_CONCURRENCY, ScoringPlan
from canon.check.variants import describe_variant, replicate_for
from canon.core.artifact import Artifact
from canon.core.baseline import ArtifactRecord, Baseline, record_for, recorded_question
from canon.core.evidence import (
    REFUTE_BAR,
    DecisionRule,
    Evidence,
    Power,
    Unit,
    add_answer,
    attainable,
    claim_for,
    evidence_from_units,
    failed_reask,
    mass_on,
    open_evidence_from,
    split_within,
)
from canon.core.rubric import Question
from canon.core.scoring import (
    Answer,
    ArtifactResult,
    Cell,
    Look,
    judge_verdict,
    refused_cell,
    score_cell,
    unscored_cell,
)
from canon.core.settle import (
    by_response,
    gate_suspects,
    response_strays,
    settle,
    solidly_satisfied,
    threshold_suspects,
    unit_flip_rate,
    upper_bound,
    violated,
    violation_suspects,
    worst_labels,
)
from canon.core.usage import Usage, total
from canon.errors import JudgeError, JudgeRefusedError, JudgeScriptError
from canon.judge.base import ResponseJudge, is_deterministic, response_judge
from canon.judge.concurrency import AdaptiveLimiter

CellKey = tuple[str, str]  # (artifact key, question id)
# A cell undecided when its re-asks ran out gets as many again when a half-and-half judge
# explains its re-asks at least as well as one straying at the flip rate (the sampled ones).
EXTEND_BAR = 1.0


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
    # What the run could confirm and what it measured of the judge (canon.core.evidence).
    power: Power = dataclasses.field(default_factory=Power)

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
    strays: tuple[int, int] | None = None,
) -> Confirmation:
    """Confirm or clear every would-be failure of a scored run.

    The run's false-alarm budget is split over its cells, or over ``budget_cells`` when
    the run is one part of a larger whole (a pytest session checking one artifact a test).
    ``record`` gives every cell a second look (a run about to become a baseline); with a
    ``baseline``, the gate question of each new or changed artifact gets one. ``strays``:
    how often the whole run's responses were misread (``canon.core.settle.response_strays``)
    when ``results`` are only part of it; measured on ``results`` otherwise.
    """
    cells = max(budget_cells or 0, sum(len(r.cells) for r in results))
    strays = strays if strays is not None else response_strays(results)
    unit_rate = unit_flip_rate(*strays, rule.flip_rate)
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
            _ArtifactConfirmation(plan, by_key[r.key], r, rule, cells, limiter, unit_rate).run(
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
    unconfirmable: list[str] = []
    best: list[float] = []
    for outcome in settled:
        if outcome.best is not None:
            best.append(outcome.best)
            if outcome.best < rule.bar(cells):
                unconfirmable.append(outcome.result.key)
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
        power=Power(
            unconfirmable=tuple(unconfirmable),
            best=min(best) if best else None,
            bar=rule.bar(cells),
            split=tuple(sorted(k for k, e in evidence.items() if e.is_split)),
            strays=strays[0],
            readings=strays[1],
            deterministic=is_deterministic(plan.judge),
            confirm_judge=plan.confirm_judge is not None,
        ),
    )


def consistent(tally: Sequence[Sequence[int]], rule: DecisionRule) -> float:
    """How much likelier a judge split half and half within each response makes these
    re-asks (agreed, disagreed per response) than one reading each response one way (either
    way) but for the flip rate: low clears a replicated claim, high at the end is a split."""
    return math.prod(split_within(a, d, rule) for a, d in tally if a + d)


def merge_power(parts: Sequence[Power]) -> Power:
    """One run's power from its parts' (each measured with the same strays and bar)."""
    if not parts:
        return Power()
    best = [p.best for p in parts if p.best is not None]
    return dataclasses.replace(
        parts[0],
        unconfirmable=tuple(k for p in parts for k in p.unconfirmable),
        best=min(best) if best else None,
        split=tuple(k for p in parts for k in p.split),
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
        power=merge_power([part.power for part in parts]),
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
    # The largest e-value a claim on this artifact could reach (deterministic judges only;
    # None: a sampling judge, re-asked until the rule's limit, is not bounded this way).
    best: float | None = None


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
        unit_rate: float | None = None,
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
        # A deterministic judge's answers are units (one per response), never re-asked.
        self.deterministic = is_deterministic(plan.judge)
        responses = len(artifact.texts)
        # The flip rate of one response unit: measured across responses when replicated.
        self.unit_rate = unit_rate if unit_rate is not None and responses > 1 else rule.flip_rate
        # Per cell, the confirm judge's reason from an answer bearing the claim out: the
        # reason reported for the cell (a decision model gives none).
        self.reasons: dict[str, str] = {}
        # A deterministic confirm judge answering whole responses (a decision model): its
        # answers, asked up front, per (cell, ask variant) (``_prefetch``).
        self.prefetched: dict[tuple[str, int], Answer | JudgeError] = {}

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
        if any(len(a) > 1 for a in self.answers.values()):
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
        flips = flip_suspects(self.result, record)
        first = [*decisive, *flips]
        claims = {q: worst_labels(self.result.cell(q)) if q in violations else None for q in first}
        await self._prefetch(claims)
        await asyncio.gather(*(self._tested(q, labels) for q, labels in claims.items()))
        if not any(self.evidence[q].status == "confirmed" for q in decisive):
            await self._test_threshold()
        self._pool_undecided()
        pooled = self._unanswered(self._pooled(), frozenset(flips))
        settled = settle(self.result, pooled, self.evidence)
        if self.spent:
            settled = dataclasses.replace(settled, reask_usage=total(self.spent))
        reasks = sum(len(a) - 1 for a in self.answers.values())
        disagreements = round(sum(self._disagreements(q) for q in self.answers))
        key = self.result.key
        return _Settled(
            settled,
            {(key, q): e for q, e in self.evidence.items()},
            reasks,
            disagreements,
            {(key, q): self._asks(q) for q in self.answers},
            {(key, q): tuple(v) for q, v in self.agreeing.items() if v},
            self._best() if self.deterministic else None,
        )

    def _pool_undecided(self) -> None:
        # Cells of one artifact whose sampled re-asks all ran out undecided are pooled: a
        # judge flipping a coin on this text is split on each, which a few re-asks per cell
        # may not show but their sum does. Under the flip rate two such cells are rare.
        undecided = {
            q: e
            for q, e in self.evidence.items()
            if e.status == "open" and e.reasks >= self.rule.max_reasks and not e.units
        }
        if len(undecided) < 2 or len(self.artifact.texts) > 1:
            return  # with replicates the sum mixes responses, which may differ: not a coin
        agreed = sum(e.agreed for e in undecided.values())
        disagreed = sum(e.disagreed for e in undecided.values())
        spread = split_within(agreed, disagreed, self.rule)
        for qid, found in undecided.items():
            if spread > found.spread:
                self.evidence[qid] = dataclasses.replace(found, spread=spread)

    def _unanswered(self, pooled: Sequence[Cell], flips: frozenset[str]) -> tuple[Cell, ...]:
        # A failure whose re-ask failed (an outage, a refused key) can be neither confirmed nor
        # cleared: the judge left its question unanswered, so it is unscored, never a pass,
        # and the run says the judge was unavailable (exit 3), as accept does. A flip's own
        # undecided status says this in a check (canon.core.compare).
        return tuple(
            unscored_cell(
                cell.question,
                f"re-asking the judge failed: {self.failed[cell.id]}",
                cell.usage,
                error_type="JudgeError",
            )
            if cell.id in self.failed
            and cell.id not in flips
            and cell.id not in self.refused
            and cell.state != "unscored"
            and self.evidence.get(cell.id) is not None
            and self.evidence[cell.id].status == "unavailable"
            else cell
            for cell in pooled
        )

    def _asks(self, qid: str) -> int:
        # A deterministic judge's first pass may hold several looks (wordings, responses):
        # each is an answer the baseline records, though they count as one unit per response.
        # (the baseline adds the responses beyond the first itself)
        looks = len(self.result.cell(qid).looks) if self.deterministic else 0
        return len(self.answers[qid]) + max(0, looks - len(self.artifact.texts))

    def _best(self) -> float:
        # Every look this artifact's claims could rest on, all reading the claim.
        count = len(self.artifact.texts)
        units = [self.unit_rate] * count
        second = self.plan.confirm_judge
        sampled = 0
        if second is not None and is_deterministic(second):
            units += [self.rule.flip_rate] * count
        elif second is not None:
            sampled = self.rule.max_reasks
        return attainable(units, sampled, self.rule)

    async def _look(self, qid: str) -> None:
        # A planned second answer; a failed one leaves the cell with its first answer only.
        cell = self.result.cell(qid)
        if qid not in self.answers:
            return
        variant = len(self.answers[qid])
        if self.deterministic and (
            len(cell.looks) > 1 or is_deterministic(self.plan.judge_for(variant))
        ):
            return  # the first pass's looks are the second look; asking again repeats one
        answer = await self._ask(cell, variant=variant)
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
            await self._tested(qid)

    async def _tested(self, qid: str, labels: frozenset[str] | None = None) -> None:
        if self.deterministic:
            await self._test_units(qid, labels)
        else:
            await self._test(qid, labels)

    async def _test_units(self, qid: str, labels: frozenset[str] | None = None) -> None:
        # A deterministic judge: each response's looks are one unit, never re-asked; the
        # confirm judge, when set, adds its answers (sampled: each its own; deterministic:
        # one unit per response) until the evidence decides.
        cell = self.result.cell(qid)
        question = cell.question
        labels, units = self._units(qid, labels)
        count = len(self.artifact.texts)
        second = self.plan.confirm_judge
        fixed = second is not None and is_deterministic(second)
        by_shown: dict[int, float] = {}  # a deterministic confirm judge: one per response
        sampled: list[float] = []

        def current() -> Evidence:
            extra = [Unit((m,), self.rule.flip_rate) for _, m in sorted(by_shown.items())]
            return evidence_from_units(
                question, labels, [*units, *extra], sampled, self.rule, self.cells
            )

        evidence = current()
        variant = calls = 0
        limit = self.rule.max_reasks
        while (
            evidence.status == "open"
            and second is not None
            and not (fixed and len(by_shown) >= count)
        ):
            if calls >= limit:
                agreed = sum(m > 0.5 for m in sampled)
                if count > 1 or not self._extend(evidence, limit, [(agreed, calls - agreed)]):
                    break
                limit = 2 * self.rule.max_reasks
            variant += 1
            shown = replicate_for(variant, count)
            if fixed and shown in by_shown:
                continue  # an identical request: its answer would be the one it gave
            answer = await self._ask(cell, variant=variant)
            calls += 1
            if isinstance(answer, str):
                self.failed[qid] = answer
                evidence = failed_reask(evidence)
                break
            self.answers[qid].append(dict(answer.distribution))
            mass = mass_on(labels, answer.distribution)
            if fixed:
                by_shown[shown] = mass
            else:
                sampled.append(mass)
            if mass > 0.5:
                self.agreeing.setdefault(qid, []).append(
                    describe_variant(question, variant, second.name, count)
                )
                if answer.rationale:
                    self.reasons[qid] = answer.rationale
            evidence = current()
        agreed = sum(m > 0.5 for m in sampled)
        spread = split_within(agreed, len(sampled) - agreed, self.rule)
        self.evidence[qid] = dataclasses.replace(evidence, spread=spread)

    def _extend(self, evidence: Evidence, limit: int, counts: Sequence[Sequence[int]]) -> bool:
        # The re-asks ran out undecided, split about as often one way as the other (within
        # each response, with replicates): as many again tell a coin-flip judge from one
        # straying at the flip rate. ``counts``: agreed and disagreed, per response.
        if limit != self.rule.max_reasks or evidence.status != "open":
            return False
        if len(counts) > 1:
            return consistent(counts, self.rule) > 1.0 / REFUTE_BAR
        ((agreed, disagreed),) = counts
        return split_within(agreed, disagreed, self.rule) >= EXTEND_BAR

    async def _test(self, qid: str, labels: frozenset[str] | None = None) -> None:
        cell = self.result.cell(qid)
        evidence = open_evidence_from(
            cell.question, self.answers[qid], self.rule, self.cells, labels
        )
        tally = [[0, 0] for _ in self.artifact.texts]  # per response: agreed, disagreed
        replicated = len(tally) > 1
        limit = self.rule.max_reasks
        while True:
            counts = tally if replicated else [(evidence.agreed, evidence.disagreed)]
            if evidence.reasks >= limit and self._extend(evidence, limit, counts):
                limit = 2 * self.rule.max_reasks
            if (
                not (
                    evidence.status == "open"
                    # with replicates, a claim is not settled before every response was
                    # re-asked, nor while a response was read both ways against it
                    or (
                        evidence.status == "confirmed"
                        and replicated
                        and any(a + d == 0 or 0 < a <= d for a, d in tally)
                    )
                )
                or evidence.reasks >= limit
            ):
                break
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
            evidence = add_answer(
                evidence, answer.distribution, self.rule, self.cells, guard=not replicated
            )
            if (
                evidence.status == "refuted"
                and replicated
                and consistent(tally, self.rule) > (1.0 / REFUTE_BAR)
            ):
                # With replicates the responses may differ (a misreading sticks to one), so
                # the claim's answers need not lean one way overall; what clears it is each
                # response read one way throughout. Until then a judge split within the
                # responses (a coin flip on this text) is not cleared.
                evidence = dataclasses.replace(evidence, status="open")
        # The judge is split when it is split on one response, not when the responses differ
        # (a misreading that sticks to one text is outvoted, not a coin flip).
        # One response: every counted answer (a second look too).
        spread = (
            max(split_within(a, d, self.rule) for a, d in tally)
            if replicated
            else split_within(evidence.agreed, evidence.disagreed, self.rule)
        )
        evidence = dataclasses.replace(evidence, spread=spread)
        if evidence.status == "confirmed" and replicated and any(a <= d for a, d in tally):
            # A misreading sticks to one text, so with replicates the response, not the ask,
            # is the unit of evidence: a claim stands only when the re-asks of every response
            # bear it out. A response read against it every time leaves the question
            # undecided, never failed (the responses differ).
            evidence = dataclasses.replace(evidence, status="open")
        if (
            replicated
            and evidence.status == "open"
            and evidence.reasks >= limit
            and consistent(tally, self.rule) > 1.0 / REFUTE_BAR
        ):
            # Every re-ask spent, and the judge never read each response one way (responses
            # read one way each that differ are a misreading outvoted, not this): it cannot
            # tell here, and a check that could not tell does not pass.
            evidence = dataclasses.replace(evidence, undecided=True)
        self.evidence[qid] = evidence

    def _units(self, qid: str, labels: frozenset[str] | None) -> tuple[frozenset[str], list[Unit]]:
        # A deterministic judge's claim on a cell (``labels``, else the one its first answer
        # makes) and its units of evidence: every look at one response is one unit.
        cell = self.result.cell(qid)
        looks = cell.looks or (Look(0, 0, cell.distribution),)
        if labels is None:
            labels = claim_for(cell.question, self.answers[qid][0].items())
        units = [
            Unit(tuple(mass_on(labels, dict(look.distribution)) for look in group), self.unit_rate)
            for group in by_response(looks).values()
        ]
        return labels, units

    async def _prefetch(self, claims: Mapping[str, frozenset[str] | None]) -> None:
        # A deterministic judge's claims are tested by a deterministic confirm judge answering
        # whole responses asking each response once (``_test_units``): ask it, up front, every
        # cell it will be asked about (a suspect its units leave open) and every cell the
        # threshold test may ask about (when the score is below it), one call a response, so
        # its state goes once a response, not once a cell (a question it was asked and no
        # test needed costs a few tokens; the state is most of a call).
        second = self.plan.confirm_judge
        judge = None if second is None else response_judge(second)
        if not self.deterministic or judge is None or not is_deterministic(judge):
            return
        cells = [q for q, labels in claims.items() if q in self.answers and self._open(q, labels)]
        score = _score(self._pooled())
        if score is not None and score < self.result.threshold:
            cells += [q for q in threshold_suspects(self.result) if q in self.answers]
        cells = list(dict.fromkeys(cells))
        if not cells:
            return
        count = len(self.artifact.texts)
        first: dict[int, int] = {}  # per response, the variant that first shows it
        for variant in range(1, 1 + count * count):
            first.setdefault(replicate_for(variant, count), variant)
        await asyncio.gather(
            *(
                self._prefetch_response(judge, shown, variant, cells)
                for shown, variant in first.items()
            )
        )

    def _open(self, qid: str, labels: frozenset[str] | None) -> bool:
        # Whether the claim stays open on the judge's own units: the confirm judge is asked.
        labels, units = self._units(qid, labels)
        question = self.result.cell(qid).question
        found = evidence_from_units(question, labels, units, [], self.rule, self.cells)
        return found.status == "open"

    async def _prefetch_response(
        self, judge: ResponseJudge, shown: int, variant: int, cells: Sequence[str]
    ) -> None:
        response = self.artifact.replicate(shown)
        requests = [
            self.plan.request(response, self.result.cell(q).question, variant) for q in cells
        ]
        try:
            async with self.limiter:  # a tripped breaker raises here: every re-ask failed
                answers = await judge.answer_all(requests)
        except JudgeScriptError:
            raise
        except JudgeError as exc:
            if exc.usage is not None:
                self.spent.append(exc.usage)  # the call's cost, once
                exc.usage = None
            # each re-ask fails as the call did (a refused key, an outage): as it would alone
            self.prefetched.update({(q, variant): exc for q in cells})
            return
        if answers.usage is not None:
            self.spent.append(answers.usage)  # the call's cost, once
        for index, qid in enumerate(cells):
            outcome = answers.outcomes.get(index)
            if isinstance(outcome, Answer):
                outcome = dataclasses.replace(outcome, usage=None)
            elif outcome is None:
                outcome = JudgeError(f"{judge.name} gave no answer to {qid}")
            self.prefetched[(qid, variant)] = outcome

    async def _ask(self, cell: Cell, *, variant: int) -> Answer | str:
        # With replicates each re-ask shows another response: a misreading that sticks to one
        # text is then outvoted by the others instead of repeating itself.
        shown = self.artifact.replicate(replicate_for(variant, len(self.artifact.texts)))
        request = self.plan.request(shown, cell.question, variant)
        judge = self.plan.judge_for(variant)
        try:
            asked = self.prefetched.pop((cell.id, variant), None)
            if isinstance(asked, JudgeError):
                raise asked
            if asked is not None:
                answer = asked
            else:
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
                # the first ask's usage stays with the cell; the re-asks' is the artifact's;
                # a confirm judge's reason for the claim it bore out is the cell's reason
                why = self.reasons.get(cell.id, cell.rationale)
                pooled_answer = Answer(mixed, why, usage=cell.usage)
                pooled.append(score_cell(cell.question, pooled_answer)._replace(looks=cell.looks))
            except JudgeError as exc:
                pooled.append(unscored_cell(cell.question, str(exc), error_type=type(exc).__name__))
        return tuple(pooled)

    def _disagreements(self, qid: str) -> float:
        # Each re-ask counts the share of its answer off the majority label: 1 or 0 for a
        # label, the judge's own probability of answering otherwise for a distribution (a
        # judge 50/50 on every re-ask disagrees with itself half the time, though its top
        # label never changes).
        answers = self.answers[qid][1:]
        if not answers:
            return 0
        majority = _majority(self.answers[qid])
        count = len(self.artifact.texts)
        if count == 1:
            return sum(_off(a, majority) for a in answers)
        # Two responses may truly differ: a re-ask is judge noise only against the other
        # answers about its own response (or the cell's majority when it is that one's only).
        groups: dict[int, list[Mapping[str, float]]] = {}
        for variant, answer in enumerate(answers, 1):
            groups.setdefault(replicate_for(variant, count), []).append(answer)
        return sum(
            sum(_off(a, _majority(group) if len(group) > 1 else majority) for a in group)
            for group in groups.values()
        )


def _score(cells: Sequence[Cell]) -> float | None:
    scores = [c.score for c in cells if c.state == "answered" and c.score is not None]
    return sum(scores) / len(scores) if scores else None


def _off(answer: Mapping[str, float], label: str) -> float:
    """The share of an answer's mass away from ``label``."""
    total = sum(answer.values())
    return 1.0 - answer.get(label, 0.0) / total if total > 0 else 1.0


def _modal(answer: Mapping[str, float]) -> str:
    return max(sorted(answer), key=lambda label: answer[label])


def _majority(answers: Sequence[Mapping[str, float]]) -> str:
    votes: dict[str, int] = {}
    for answer in answers:
        label = _modal(answer)
        votes[label] = votes.get(label, 0) + 1
    return max(sorted(votes), key=lambda label: votes[label])
