"""The agreement reports of ``canon align`` and ``canon rejudge``, as text and plain data."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from canon.core.agreement import KAPPA_METHOD, QuestionAgreement
from canon.core.alignment import agreement_to_data
from canon.core.calibration import (
    CALIBRATION_METHOD,
    FEW_LABELS,
    QuestionCalibration,
    calibration_to_data,
)
from canon.core.usage import UsageSummary
from canon.report.text import printable

NO_REASON = "(no reason given)"


def kappa_text(found: QuestionAgreement) -> str:
    """A question's kappa with its interval, ``0.47 [0.10, 0.80]``, or why it has none."""
    if found.kappa is None:
        return "undefined (one answer only)"
    interval = found.kappa_interval
    shown = "" if interval is None else f" [{interval[0]:.2f}, {interval[1]:.2f}]"
    return f"{found.kappa:.2f}{shown}"


def _agreement(found: QuestionAgreement) -> str:
    if found.agreement is None:
        return "agreement n/a"
    same = found.n - len(found.disagreements)
    return f"agreement {same}/{found.n} = {found.agreement:.0%}"


def question_lines(questions: Sequence[QuestionAgreement]) -> list[str]:
    """One line per question: n, raw agreement, kappa, violation recall and precision."""
    width = max((len(q.label) for q in questions), default=0)
    return [
        f"  {q.label:{width}}  n={q.n}  {_agreement(q)}  kappa {kappa_text(q)}  violations "
        f"({'/'.join(q.violations)}): recall {q.violation_recall}, precision "
        f"{q.violation_precision}"
        for q in questions
    ]


def confusion_lines(questions: Sequence[QuestionAgreement], rows: str, columns: str) -> list[str]:
    """Each question's confusion matrix, ``rows`` down and ``columns`` across."""
    lines = [f"confusion matrices (rows: {rows}, columns: {columns}):"]
    for q in questions:
        labels = sorted({*q.confusion, *(j for row in q.confusion.values() for j in row)})
        width = max(6, *(len(label) + 1 for label in labels))
        lines.append(f"  {q.label}")
        lines.append("    " + " " * width + "".join(f"{label:>{width}}" for label in labels))
        for label in labels:
            row = q.confusion.get(label, {})
            counts = "".join(f"{row.get(other, 0):>{width}}" for other in labels)
            lines.append(f"    {label:<{width}}{counts}")
    return lines


def number_text(value: float | None, digits: int = 3) -> str:
    """A measured number as reports print it, ``n/a`` when it was not measured."""
    return "n/a" if value is None else f"{value:.{digits}f}"


def calibration_note(found: QuestionCalibration) -> str | None:
    """What to keep in mind reading a question's calibration, or None."""
    notes = []
    if found.one_hot:
        notes.append("one-hot answers: Brier = 2 x (1 - agreement), ECE = 1 - agreement")
    if found.few:
        notes.append(f"only {found.n} label(s), under {FEW_LABELS}: the ECE is a rough sketch")
    return "; ".join(notes) or None


def calibration_summary(found: QuestionCalibration) -> str:
    """The Brier score beside its base rate's, the ECE beside a calibrated judge's."""
    return (
        f"Brier {number_text(found.brier)} (label frequencies alone: "
        f"{number_text(found.uncertainty)}); ECE {number_text(found.ece)} "
        f"(a perfectly calibrated judge: up to {number_text(found.calibrated_ece)} at this n)"
    )


def calibration_lines(calibration: Sequence[QuestionCalibration]) -> list[str]:
    """Per question: n, the Brier score against its base rate, the ECE, a note when the
    numbers are accuracy or too few to read, then the reliability bins that hold answers."""
    if not calibration:
        return []
    width = max(len(c.label) for c in calibration)
    lines = [f"calibration ({CALIBRATION_METHOD}):"]
    for c in calibration:
        note = calibration_note(c)
        lines.append(
            f"  {c.label:{width}}  n={c.n}  {calibration_summary(c)}"
            + (f"  ({note})" if note else "")
        )
        shown = [
            f"{b.low:.1f}-{b.high:.1f}: {b.confidence:.2f} -> {b.accuracy:.2f} (n={b.count})"
            for b in c.bins
            if b.count and b.confidence is not None and b.accuracy is not None
        ]
        if shown:
            lines.append("    bins (confidence -> accuracy): " + ", ".join(shown))
    return lines


def render_alignment(
    questions: Sequence[QuestionAgreement],
    *,
    suite: str,
    judge: str,
    labels: str,
    artifacts: int,
    recorded: str | None,
    usage: UsageSummary,
    calibration: Sequence[QuestionCalibration] = (),
) -> str:
    """The ``canon align`` report: per question agreement and calibration, the matrices,
    every disagreement, what the judge's calls spent."""
    count = sum(q.n for q in questions)
    lines = [
        f"canon align: suite '{suite}', judge {judge}: {count} label(s) on {artifacts} "
        f"artifact(s) from {labels}",
        f"  kappa interval: 95% {KAPPA_METHOD}; rates: 95% Wilson intervals",
        *question_lines(questions),
        *calibration_lines(calibration),
        *confusion_lines(questions, "person", "judge"),
    ]
    disagreements = [(q, d) for q in questions for d in q.disagreements]
    lines.append(f"disagreements ({len(disagreements)}):")
    for q, d in disagreements:
        lines.append(f"  {d.key} {q.label}: person {d.reference}, judge {d.judged}")
        lines.append(f"    judge: {_one_line(d.reason)}")
    lines.append(usage.line())
    if recorded is not None:
        lines.append(f"recorded -> {recorded}")
    return "\n".join(map(printable, lines)) + "\n"


def _one_line(reason: str | None, width: int = 160) -> str:
    if not reason or not reason.strip():
        return NO_REASON
    flat = " ".join(reason.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def alignment_document(
    questions: Sequence[QuestionAgreement],
    *,
    suite: str,
    judge: str,
    labels: str,
    artifacts: int,
    recorded: str | None,
    usage: UsageSummary,
    calibration: Sequence[QuestionCalibration] = (),
) -> dict[str, Any]:
    """The ``canon align`` report as plain data, for ``--format json``."""
    calibrated = {c.question: c for c in calibration}
    return {
        "suite": suite,
        "judge": judge,
        "labels": labels,
        "artifacts": artifacts,
        "kappa_method": KAPPA_METHOD,
        "calibration_method": CALIBRATION_METHOD,
        "recorded": recorded,
        "questions": {
            q.question: {
                **agreement_to_data(q),
                **(
                    {"calibration": calibration_to_data(calibrated[q.question])}
                    if q.question in calibrated
                    else {}
                ),
                "disagreements": [
                    {"artifact": d.key, "human": d.reference, "judge": d.judged, "reason": d.reason}
                    for d in q.disagreements
                ],
            }
            for q in questions
        },
        "usage": usage.as_data(),
    }


def render_rejudge(
    questions: Sequence[QuestionAgreement],
    suite: str,
    baseline: str,
    old_judge: str,
    new_judge: str,
    artifacts: int,
    missing: Sequence[str],
    *,
    outcome: str,
    usage: UsageSummary,
) -> str:
    """The ``canon rejudge`` report: old-vs-new agreement, every flip, what the new judge's
    calls spent, and what was written."""
    flips = [(q, d) for q in questions for d in q.disagreements]
    lines = [
        f"canon rejudge: suite '{suite}', {artifacts} artifact(s) of {baseline}: baseline "
        f"judged by {old_judge}, now by {new_judge}",
        f"  kappa interval: 95% {KAPPA_METHOD}; rates: 95% Wilson intervals",
        *question_lines(questions),
    ]
    changed = [q for q in questions if q.disagreements]
    if changed:
        lines.extend(confusion_lines(changed, "old judge", "new judge"))
    lines.append(f"flips ({len(flips)}):")
    for q, d in flips:
        lines.append(f"  {d.key} {q.label}: old {d.reference} -> new {d.judged}")
        lines.append(f"    new judge: {_one_line(d.reason)}")
        old = d.reference_reason
        lines.append(f"    old judge: {_one_line(old) if old else '(no reason recorded)'}")
    if missing:
        lines.append(
            f"note: {len(missing)} baseline artifact(s) not in the suite, not re-judged: "
            + ", ".join(missing)
        )
    lines.append(usage.line())
    lines.append(outcome)
    return "\n".join(map(printable, lines)) + "\n"


def rejudge_document(
    questions: Sequence[QuestionAgreement],
    suite: str,
    baseline: str,
    old_judge: str,
    new_judge: str,
    artifacts: int,
    missing: Sequence[str],
    *,
    accepted: bool,
    usage: UsageSummary,
) -> dict[str, Any]:
    """The ``canon rejudge`` report as plain data, for ``--format json``."""
    return {
        "suite": suite,
        "baseline": baseline,
        "old_judge": old_judge,
        "new_judge": new_judge,
        "artifacts": artifacts,
        "missing": list(missing),
        "accepted": accepted,
        "kappa_method": KAPPA_METHOD,
        "questions": {
            q.question: {
                **agreement_to_data(q),
                "flips": [
                    {
                        "artifact": d.key,
                        "old": d.reference,
                        "new": d.judged,
                        "new_reason": d.reason,
                        "old_reason": d.reference_reason,
                    }
                    for d in q.disagreements
                ],
            }
            for q in questions
        },
        "usage": usage.as_data(),
    }
