"""The check as a library: score, confirm, compare — shared by the CLI, pytest and Python.

``score_run`` scores a suite and confirms every would-be failure; ``baseline_from_run``
turns that into a baseline; ``check_run`` (``compare_run`` on a scored run) compares it with
one. None of them prints or exits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from canon.check.confirm import Confirmation, confirm
from canon.check.runner import DEFAULT_CONCURRENCY, ProgressCallback, ScoringPlan, score_artifacts
from canon.core.artifact import Artifact
from canon.core.baseline import Baseline, baseline_from_results
from canon.core.compare import DEFAULT_TOLERANCE, Comparison, ReaskNoise, gate, provenance_notes
from canon.core.evidence import DecisionRule
from canon.core.scoring import ArtifactResult
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
    concurrency: int = DEFAULT_CONCURRENCY,
    on_result: ProgressCallback | None = None,
    budget_cells: int | None = None,
    record: bool = False,
) -> Confirmation:
    """Score artifacts, then re-ask what a failing verdict (or a flip) hangs on.

    ``record``: the run becomes a baseline, so every answer gets a second look first.
    """
    limiter = AdaptiveLimiter(concurrency)  # one per run: the re-asks share what it learned
    first = await score_artifacts(
        plan, artifacts, concurrency=concurrency, on_result=on_result, limiter=limiter
    )
    return await confirm(
        plan,
        artifacts,
        first,
        rule or DecisionRule(),
        baseline=baseline,
        concurrency=concurrency,
        budget_cells=budget_cells,
        limiter=limiter,
        record=record,
    )


def baseline_from_run(plan: ScoringPlan, confirmation: Confirmation) -> Baseline:
    """The baseline a confirmed run records: pooled answers and how many asks each had."""
    return baseline_from_results(
        confirmation.results,
        rubric=plan.rubric,
        judge=plan.judge.name,
        constitution=plan.constitution.digest,
        threshold=plan.threshold,
        asks=confirmation.asks,
        replicates=confirmation.replicates,
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
    concurrency: int = DEFAULT_CONCURRENCY,
    on_result: ProgressCallback | None = None,
) -> CheckOutcome:
    """Score and confirm a run, then compare it with ``baseline``."""
    rule = rule or DecisionRule()
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
    """Compare a confirmed run with its baseline, provenance notes first."""
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
