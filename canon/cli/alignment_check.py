"""What a failed ``canon check`` says of the judge's recorded agreement with people."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from canon.check.provenance import as_judge_option
from canon.check.provenance import refuse_changed_judge as refuse
from canon.check.runner import ScoringPlan
from canon.cli.common import shown_path
from canon.core.alignment import (
    AlignmentRecord,
    AlignmentStatus,
    Provenance,
    alignment_statuses,
    below_required,
    failing_questions,
)
from canon.core.baseline import Baseline
from canon.core.comparison import Comparison
from canon.core.scoring import ArtifactResult
from canon.project.alignment_store import alignment_path, read_alignment


def provenance_of(plan: ScoringPlan) -> Provenance:
    """What an alignment measured with this plan holds for."""
    return Provenance(plan.judge.name, plan.rubric.fingerprint, plan.constitution.digest)


def load_alignment(baseline: Path) -> tuple[AlignmentRecord, ...]:
    """The alignment recorded next to a baseline; read before the run, so a damaged file
    stops the check before it spends a judge call."""
    path = alignment_path(baseline)
    return read_alignment(path, shown_path(path))


def check_alignment(
    records: Sequence[AlignmentRecord],
    plan: ScoringPlan,
    comparison: Comparison,
    results: Sequence[ArtifactResult],
    require: float | None,
) -> tuple[tuple[AlignmentStatus, ...], str | None]:
    """For a failed check: each failing question's recorded alignment, and why
    ``--require-alignment`` fails the run (None when it does not)."""
    if not comparison.failed:
        return (), None
    failing = failing_questions(comparison, results)
    if not failing:
        return (), None
    provenance = provenance_of(plan)
    statuses = alignment_statuses(failing, records, provenance)
    refusal = None if require is None else below_required(statuses, require)
    return statuses, refusal


def refuse_changed_judge(baseline: Baseline, plan: ScoringPlan, source: str) -> None:
    """Stop a check whose judge is not the baseline's: its differences would be the judge's."""
    judge = plan.judge.name
    remedy = (
        f'run "canon rejudge --judge {as_judge_option(judge)}" to compare the two judges on '
        "the baseline's artifacts before accepting"
    )
    refuse(baseline, judge, source=source, remedy=remedy)
