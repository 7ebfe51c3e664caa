"""The check as a library: score, confirm, compare — shared by the CLI, pytest and Python.

``score_run`` scores a suite and confirms every would-be failure; ``baseline_from_run``
turns that into a baseline; ``check_run`` (``compare_run`` on a scored run) compares it with
one. None of them prints or exits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from canon.check.confirm import Confirmation, confirm, merge_confirmations
from canon.check.provenance import (
    JudgeChangedError,
    answering_change,
    answering_models,
    read_as_recorded,
    reads_probabilities,
    refuse_alias,
    samples_asked,
)
from canon.check.runner import (
    ProgressCallback,
    ScoringPlan,
    all_of,
    gate_outcomes,
    score_artifact,
)
from canon.core.artifact import Artifact
from canon.core.baseline import Baseline, baseline_from_results
from canon.core.compare import DEFAULT_TOLERANCE, Comparison, ReaskNoise, gate, provenance_notes
from canon.core.evidence import DecisionRule
from canon.core.scoring import ArtifactResult
from canon.core.settle import response_strays
from canon.judge.concurrency import AdaptiveLimiter


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    """A checked run: its settled results, the evidence, and the comparison."""

    confirmation: Confirmation
    comparison: Comparison

    @property
    def results(self) -> tuple[ArtifactResult, ...]:
        """The settled results of the run."""
        return self.confirmation.results


async def score_run(
    plan: ScoringPlan,
    artifacts: Sequence[Artifact],
    rule: DecisionRule | None = None,
    *,
    baseline: Baseline | None = None,
    concurrency: int | None = None,
    on_result: ProgressCallback | None = None,
    budget_cells: int | None = None,
    record: bool = False,
    limiter: AdaptiveLimiter | None = None,
    prior: tuple[int, int] = (0, 0),
) -> Confirmation:
    """Score artifacts, then re-ask what a failing verdict (or a flip) hangs on.

    ``rule`` and ``concurrency`` default to the plan's. ``budget_cells``: the run is one
    part of a larger whole (a pytest session checking one artifact a test) whose cells the
    false-alarm budget is split over. ``record``: the run becomes a
    baseline, so every answer gets a second look first. ``on_result`` hears of each
    artifact once its verdict is settled (after its confirmation), never of a first draft.
    ``prior``: the misread responses and readings (``response_strays``) that earlier parts
    of the same whole measured (a pytest session's earlier tests), added to this run's own.
    """
    concurrency = concurrency or plan.concurrency
    rule = rule or plan.rule
    # One limiter per run (or the caller's, kept across runs): the re-asks share what it learned.
    limiter = limiter or AdaptiveLimiter(concurrency)
    outcomes = [gate_outcomes(plan, artifact) for artifact in artifacts]
    judged = sum(not any(o.stops for o in found) for found in outcomes)
    # The false-alarm budget is split over every judged cell of the run (or of the whole a
    # run is part of), so each artifact is confirmed as it would be in one pass over all.
    cells = max(budget_cells or 0, judged * len(plan.questions))
    if baseline is not None and not record:
        cells = max(cells, suite_cells(plan, baseline))
    done = 0
    # Every first pass before any confirmation: how often the judge misread one response
    # beside the others is measured over the whole run (canon.core.settle.response_strays).
    firsts = await all_of(
        [
            score_artifact(plan, artifact, limiter, outcomes=found)
            for artifact, found in zip(artifacts, outcomes, strict=True)
        ]
    )
    found = response_strays(firsts)
    strays = (found[0] + prior[0], found[1] + prior[1])

    async def one(artifact: Artifact, first: ArtifactResult) -> Confirmation:
        nonlocal done
        part = await confirm(
            plan,
            [artifact],
            [first],
            rule,
            baseline=baseline,
            budget_cells=cells,
            limiter=limiter,
            record=record,
            strays=strays,
        )
        done += 1
        if on_result is not None:
            on_result(done, len(artifacts), part.results[0])
        return part

    parts = await all_of([one(a, first) for a, first in zip(artifacts, firsts, strict=True)])
    return merge_confirmations(parts, cells)


def suite_cells(plan: ScoringPlan, baseline: Baseline) -> int:
    """The cells of a suite as its baseline records it: a check splits its false-alarm
    budget over at least these, whichever door checks it and however many artifacts a door
    checks at once (``--select``, or one per pytest test)."""
    return len(baseline.artifacts) * len(plan.questions)


def baseline_from_run(plan: ScoringPlan, confirmation: Confirmation) -> Baseline:
    """The baseline a confirmed run records: pooled answers and how many asks each had."""
    refuse_alias(plan.judge)
    return baseline_from_results(
        confirmation.results,
        rubric=plan.rubric,
        judge=plan.judge.name,
        constitution=plan.constitution.digest,
        threshold=plan.threshold,
        asks=confirmation.asks,
        replicates=confirmation.replicates,
        inputs=confirmation.inputs,
        answered_by=answering_models(plan.judge),
        logprobs=reads_probabilities((plan.judge, plan.confirm_judge)),
        samples=samples_asked((plan.judge, plan.confirm_judge)),
    )


def noise_of(confirmation: Confirmation, rule: DecisionRule) -> ReaskNoise:
    """What the run's re-asks showed of the judge's own disagreement."""
    return ReaskNoise(confirmation.reasks, confirmation.disagreements, rule.flip_rate)


async def check_run(
    plan: ScoringPlan,
    artifacts: Sequence[Artifact],
    baseline: Baseline,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    rule: DecisionRule | None = None,
    strict: bool = False,
    concurrency: int | None = None,
    on_result: ProgressCallback | None = None,
) -> CheckOutcome:
    """Score and confirm a run, then compare it with ``baseline`` (``rule`` and
    ``concurrency`` default to the plan's)."""
    rule = rule or plan.rule
    read_as_recorded((plan.judge, plan.confirm_judge), baseline)
    confirmation = await score_run(
        plan,
        artifacts,
        rule,
        baseline=baseline,
        concurrency=concurrency,
        on_result=on_result,
    )
    return CheckOutcome(
        confirmation, compare_run(plan, confirmation, baseline, tolerance, rule, strict)
    )


def compare_run(
    plan: ScoringPlan,
    confirmation: Confirmation,
    baseline: Baseline,
    tolerance: float,
    rule: DecisionRule,
    strict: bool = False,
) -> Comparison:
    """Compare a confirmed run with its baseline, provenance notes first. A run answered by
    another release of the baseline's judge is refused (``JudgeChangedError``): the judges'
    differences are not the agent's regressions (``canon rejudge`` compares them)."""
    change = answering_change(baseline, answering_models(plan.judge), source="baseline")
    if change is not None:
        raise JudgeChangedError(
            f"{change}: compare the judges with canon rejudge, then accept its baseline; "
            "no regression was looked for"
        )
    comparison = gate(
        confirmation.results,
        baseline,
        plan.threshold,
        tolerance,
        evidence=confirmation.evidence,
        rule=rule,
        noise=noise_of(confirmation, rule),
        strict=strict,
        constitution=plan.constitution.digest,
        inputs=confirmation.inputs,
        power=confirmation.power,
    )
    if confirmation.variations:
        flips = tuple(
            replace(f, confirmed_by=confirmation.variations.get((f.key, f.question), ()))
            for f in comparison.flips
        )
        comparison = replace(comparison, flips=flips)
    extra = provenance_notes(baseline, judge=plan.judge.name, constitution=plan.constitution.digest)
    if not extra:
        return comparison
    return replace(comparison, notes=(*extra, *comparison.notes))
