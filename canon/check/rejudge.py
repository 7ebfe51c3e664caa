"""``canon rejudge`` as a library: the baseline's own artifacts, asked of another judge.

Each answer the baseline recorded (its pooled choice) is paired with the new judge's settled
choice, question by question, and measured like human labels (``canon.core.agreement``):
kappa, raw agreement and every flip. Nothing is written here; accepting is the caller's step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from canon.check.confirm import Confirmation
from canon.check.pipeline import score_run
from canon.check.runner import DEFAULT_CONCURRENCY, ScoringPlan
from canon.check.spend import run_usage
from canon.core.agreement import LabelPair, QuestionAgreement, agreement, modal_label
from canon.core.artifact import Artifact
from canon.core.baseline import Baseline, QuestionRecord, recorded_question
from canon.core.evidence import DecisionRule
from canon.core.rubric import Question
from canon.core.usage import UsageSummary


@dataclass(frozen=True, slots=True)
class Rejudged:
    """The new judge's run over the baseline's artifacts, and old-vs-new agreement."""

    confirmation: Confirmation
    questions: tuple[QuestionAgreement, ...]  # reference = the baseline's judge
    missing: tuple[str, ...]  # baseline artifacts the suite no longer holds

    @property
    def usage(self) -> UsageSummary:
        """What the new judge's run spent."""
        return run_usage(self.confirmation.results)

    @property
    def flips(self) -> int:
        """How many answers the new judge gave differently."""
        return sum(len(q.disagreements) for q in self.questions)


def recorded_label(question: Question, row: QuestionRecord) -> str | None:
    """The choice a baseline row records: its pooled modal answer (or, in format 2, the
    choice its score names); None when it was unscored."""
    if row.state == "unscored":
        return None
    if row.state == "na":
        return next((c.label for c in question.choices if c.score is None), None)
    if row.distribution:
        return modal_label(row.distribution)
    if row.score is None:
        return None
    nearest = min(
        (c for c in question.choices if c.score is not None),
        key=lambda c: abs((c.score or 0.0) - (row.score or 0.0)),
    )
    return nearest.label


def old_vs_new(
    questions: Sequence[Question], baseline: Baseline, confirmation: Confirmation
) -> tuple[QuestionAgreement, ...]:
    """Per question, the baseline judge's answers against the new judge's."""
    pairs: dict[str, list[LabelPair]] = {}
    for result in confirmation.results:
        record = baseline.artifacts.get(result.key)
        if record is None:
            continue
        for cell in result.cells:
            row = recorded_question(record, cell.question)
            if row is None or row.subject != cell.question.subject or cell.state == "unscored":
                continue
            before = recorded_label(cell.question, row)
            now = modal_label(cell.distribution)
            if before is None or now is None:
                continue
            pairs.setdefault(cell.id, []).append(LabelPair(result.key, before, now, cell.rationale))
    return tuple(agreement(q, pairs[q.id]) for q in questions if q.id in pairs)


def rejudge_scope(artifacts: Sequence[Artifact], baseline: Baseline) -> list[Artifact]:
    """What ``canon rejudge`` scores: the suite's artifacts the baseline recorded. The run,
    its budget check and ``--estimate`` all start from this list."""
    return [a for a in artifacts if a.key in baseline.artifacts]


async def rejudge_run(
    plan: ScoringPlan,
    artifacts: Sequence[Artifact],
    baseline: Baseline,
    rule: DecisionRule | None = None,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> Rejudged:
    """Score the suite's artifacts the baseline recorded with ``plan``'s (new) judge."""
    confirmation = await score_run(
        plan, rejudge_scope(artifacts, baseline), rule, concurrency=concurrency
    )
    return rejudged(plan.questions, baseline, confirmation)


def rejudged(
    questions: Sequence[Question], baseline: Baseline, confirmation: Confirmation
) -> Rejudged:
    """The new judge's run (over ``rejudge_scope``) measured against the baseline's answers."""
    present = {result.key for result in confirmation.results}
    missing = tuple(sorted(k for k in baseline.artifacts if k not in present))
    return Rejudged(confirmation, old_vs_new(questions, baseline, confirmation), missing)
