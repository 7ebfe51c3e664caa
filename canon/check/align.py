"""``canon align`` as a library: ask the judge about labelled artifacts, compare with people.

The judge is asked exactly as ``canon score`` asks it (through the answer cache, with the
same confirmation re-asks), but without the deterministic gates: the question here is how
well the judge answers, so an artifact a policy would stop is still put to the judge.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from canon.check.confirm import Confirmation
from canon.check.pipeline import score_run
from canon.check.runner import DEFAULT_CONCURRENCY, ScoringPlan
from canon.check.spend import run_usage
from canon.core.agreement import LabelPair, QuestionAgreement, agreement, modal_label
from canon.core.alignment import AlignmentRecord, Provenance, agreement_to_data
from canon.core.artifact import Artifact
from canon.core.calibration import (
    Forecast,
    QuestionCalibration,
    calibration,
    calibration_to_data,
)
from canon.core.evidence import DecisionRule
from canon.core.rubric import Question
from canon.core.scoring import ArtifactResult
from canon.core.usage import UsageSummary


@dataclass(frozen=True, slots=True)
class Unscored:
    """A labelled question the judge could not answer: never counted as agreement."""

    key: str
    question: str
    error: str


@dataclass(frozen=True, slots=True)
class Alignment:
    """Per labelled question, how the judge's answers compare with a person's."""

    questions: tuple[QuestionAgreement, ...]  # rubric order; only questions with labels
    artifacts: int  # labelled artifacts the judge was asked about
    unscored: tuple[Unscored, ...] = ()
    reasks: int = 0  # confirmation re-asks spent
    usage: UsageSummary = dataclasses.field(default_factory=UsageSummary)  # what was spent
    # Per labelled question, in the order of ``questions``: the judge's probabilities
    # against the labels (canon.core.calibration).
    calibration: tuple[QuestionCalibration, ...] = ()

    def record(
        self, provenance: Provenance, *, rubric_version: str, labels: str
    ) -> AlignmentRecord:
        """What the alignment file keeps of this measurement."""
        return AlignmentRecord(
            provenance,
            rubric_version,
            labels,
            {
                q.question: {
                    **agreement_to_data(q),
                    "calibration": calibration_to_data(c, bins=False),
                }
                for q, c in zip(self.questions, self.calibration, strict=True)
            },
        )


def compare_labels(
    questions: Sequence[Question],
    results: Sequence[ArtifactResult],
    labels: Mapping[str, Mapping[str, str]],
) -> Alignment:
    """Pair each label with the judge's settled answer and measure agreement and
    calibration per question."""
    pairs: dict[str, list[LabelPair]] = {}
    forecasts: dict[str, list[Forecast]] = {}
    unscored: list[Unscored] = []
    for result in results:
        wanted = labels.get(result.key, {})
        for cell in result.cells:
            if cell.id not in wanted:
                continue
            judged = modal_label(cell.distribution) if cell.state != "unscored" else None
            if judged is None:
                unscored.append(Unscored(result.key, cell.id, cell.error or "no answer"))
                continue
            pairs.setdefault(cell.id, []).append(
                LabelPair(result.key, wanted[cell.id], judged, cell.rationale)
            )
            forecasts.setdefault(cell.id, []).append(
                Forecast(dict(cell.distribution), wanted[cell.id])
            )
    labelled = [q for q in questions if q.id in pairs]
    return Alignment(
        tuple(agreement(q, pairs[q.id]) for q in labelled),
        len(results),
        tuple(unscored),
        calibration=tuple(calibration(q, forecasts[q.id]) for q in labelled),
    )


def align_scope(
    plan: ScoringPlan,
    artifacts: Sequence[Artifact],
    labels: Mapping[str, Mapping[str, str]],
) -> tuple[ScoringPlan, list[Artifact]]:
    """What ``canon align`` scores: the labelled artifacts, under the plan without its gates.
    The run, its budget check and ``--estimate`` all start from this one pair."""
    return dataclasses.replace(plan, gates=()), [a for a in artifacts if a.key in labels]


async def align_run(
    plan: ScoringPlan,
    artifacts: Sequence[Artifact],
    labels: Mapping[str, Mapping[str, str]],
    rule: DecisionRule | None = None,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> Alignment:
    """Ask the judge about every labelled artifact and compare its answers with the labels."""
    judge_only, chosen = align_scope(plan, artifacts, labels)
    confirmation = await score_run(judge_only, chosen, rule, concurrency=concurrency)
    return alignment_of(plan.questions, confirmation, labels)


def alignment_of(
    questions: Sequence[Question],
    confirmation: Confirmation,
    labels: Mapping[str, Mapping[str, str]],
) -> Alignment:
    """The judge's run (over ``align_scope``) measured against the labels, with what it spent."""
    found = compare_labels(questions, confirmation.results, labels)
    return dataclasses.replace(
        found, reasks=confirmation.reasks, usage=run_usage(confirmation.results)
    )
