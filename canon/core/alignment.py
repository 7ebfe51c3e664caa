"""Recorded alignment: what ``canon align`` measured, under which judge, rubric, constitution.

A check that fails on a principle names how far the judge is trusted there: the kappa it
reached against human labels, recorded under the same judge, rubric fingerprint and
constitution digest, or "not validated" when no such measurement exists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from canon.core.agreement import QuestionAgreement
from canon.core.comparison import Comparison, Rate
from canon.core.scoring import ArtifactResult
from canon.core.settle import SOLID_VIOLATED
from canon.errors import BaselineError

ALIGNMENT_FORMAT = 1


@dataclass(frozen=True, slots=True)
class Provenance:
    """What a measurement of agreement holds for: one judge, rubric and constitution."""

    judge: str
    rubric_fingerprint: str
    constitution: str

    @property
    def key(self) -> tuple[str, str, str]:
        """The sort key of records in the file."""
        return (self.judge, self.rubric_fingerprint, self.constitution)


@dataclass(frozen=True, slots=True)
class AlignmentRecord:
    """One ``canon align`` result: its provenance and, per question id, its plain data."""

    provenance: Provenance
    rubric_version: str
    labels: str  # the labels file it was measured on, as given
    questions: Mapping[str, Mapping[str, Any]]

    def kappa(self, question: str) -> tuple[float | None, tuple[float, float] | None, int] | None:
        """The recorded kappa, its interval and n for a question id; None if not measured."""
        data = self.questions.get(question)
        if data is None:
            return None
        interval = data.get("kappa_interval")
        return (
            data.get("kappa"),
            None if interval is None else (interval[0], interval[1]),
            data["n"],
        )


def _rate_data(rate: Rate) -> tuple[float | None, list[float] | None]:
    value = rate.value
    return (None if value is None else round(value, 6)), (
        None if not rate.trials else [round(x, 6) for x in rate.interval]
    )


def agreement_to_data(found: QuestionAgreement) -> dict[str, Any]:
    """One question's agreement as plain data (the JSON report and the alignment file)."""
    recall, recall_interval = _rate_data(found.violation_recall)
    precision, precision_interval = _rate_data(found.violation_precision)
    interval = found.kappa_interval
    return {
        "principle": found.principle,
        "n": found.n,
        "agreement": None if found.agreement is None else round(found.agreement, 6),
        "kappa": None if found.kappa is None else round(found.kappa, 6),
        "kappa_interval": None if interval is None else [round(x, 6) for x in interval],
        "violation_labels": list(found.violations),
        "violation_recall": recall,
        "violation_recall_interval": recall_interval,
        "violation_precision": precision,
        "violation_precision_interval": precision_interval,
        "violations": {
            "reference": found.violation_recall.trials,
            "judged": found.violation_precision.trials,
            "both": found.violation_recall.successes,
        },
        "confusion": {k: dict(v) for k, v in found.confusion.items()},
    }


def record_to_data(record: AlignmentRecord) -> dict[str, Any]:
    """A record as plain data."""
    p = record.provenance
    return {
        "judge": p.judge,
        "rubric": {"fingerprint": p.rubric_fingerprint, "version": record.rubric_version},
        "constitution": p.constitution,
        "labels": record.labels,
        "questions": {k: dict(v) for k, v in record.questions.items()},
    }


def alignment_to_data(records: Sequence[AlignmentRecord]) -> dict[str, Any]:
    """An alignment file's plain data: records sorted by judge, rubric, constitution."""
    ordered = sorted(records, key=lambda r: r.provenance.key)
    return {"format": ALIGNMENT_FORMAT, "records": [record_to_data(r) for r in ordered]}


def merge_record(
    records: Sequence[AlignmentRecord], record: AlignmentRecord
) -> tuple[AlignmentRecord, ...]:
    """The records with ``record`` replacing any measured under the same provenance."""
    kept = [r for r in records if r.provenance != record.provenance]
    return tuple(sorted([*kept, record], key=lambda r: r.provenance.key))


def alignment_from_data(data: object, *, source: str) -> tuple[AlignmentRecord, ...]:
    """Validate an alignment file's plain data; every problem names ``source``."""
    if not isinstance(data, Mapping) or set(data) != {"format", "records"}:
        raise BaselineError(f"{source}: an alignment file has exactly 'format' and 'records'")
    if data["format"] != ALIGNMENT_FORMAT:
        raise BaselineError(
            f"{source}: unknown alignment format {data['format']!r}; expected {ALIGNMENT_FORMAT}"
        )
    raw = data["records"]
    if not isinstance(raw, list):
        raise BaselineError(f"{source}: 'records' must be a list")
    return tuple(_record(item, i, source) for i, item in enumerate(raw, 1))


def _record(item: object, index: int, source: str) -> AlignmentRecord:
    where = f"{source}: record {index}"
    keys = {"judge", "rubric", "constitution", "labels", "questions"}
    if not isinstance(item, Mapping) or set(item) != keys:
        raise BaselineError(f"{where}: expected exactly {', '.join(sorted(keys))}")
    rubric = item["rubric"]
    texts = [item["judge"], item["constitution"], item["labels"]]
    if not isinstance(rubric, Mapping) or set(rubric) != {"fingerprint", "version"}:
        raise BaselineError(f"{where}: 'rubric' must hold 'fingerprint' and 'version'")
    texts += [rubric["fingerprint"], rubric["version"]]
    if not all(isinstance(t, str) and t for t in texts):
        raise BaselineError(f"{where}: judge, constitution, labels and rubric must be text")
    questions = item["questions"]
    if not isinstance(questions, Mapping):
        raise BaselineError(f"{where}: 'questions' must be a mapping of question ids")
    for qid, row in questions.items():
        _check_question(row, f"{where}: question {qid!r}")
    return AlignmentRecord(
        Provenance(item["judge"], rubric["fingerprint"], item["constitution"]),
        rubric["version"],
        item["labels"],
        {str(k): dict(v) for k, v in questions.items()},
    )


def _check_question(row: object, where: str) -> None:
    if not isinstance(row, Mapping):
        raise BaselineError(f"{where}: expected a mapping")
    n = row.get("n")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise BaselineError(f"{where}: 'n' must be a whole number >= 0")
    kappa = row.get("kappa")
    if kappa is not None and (isinstance(kappa, bool) or not isinstance(kappa, int | float)):
        raise BaselineError(f"{where}: 'kappa' must be a number or null")
    interval = row.get("kappa_interval")
    if interval is not None and (
        not isinstance(interval, list)
        or len(interval) != 2
        or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in interval)
    ):
        raise BaselineError(f"{where}: 'kappa_interval' must be [low, high] or null")
    principle = row.get("principle")
    if principle is not None and not isinstance(principle, str):
        raise BaselineError(f"{where}: 'principle' must be text or null")
    # Records written before calibration was measured have none; that is still a record.
    found = row.get("calibration")
    if found is None:
        return
    if not isinstance(found, Mapping):
        raise BaselineError(f"{where}: 'calibration' must be a mapping")
    for key in ("brier", "ece"):
        value = found.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise BaselineError(f"{where}: calibration '{key}' must be a number or null")


class Failing(NamedTuple):
    """A question a check failed on: its id, its principle's id, and its kind."""

    question: str
    principle: str | None = None
    kind: str = "principle"


def failing_questions(
    comparison: Comparison, results: Sequence[ArtifactResult]
) -> tuple[Failing, ...]:
    """The questions behind what failed a check, first seen first.

    A confirmed (or pending) flip names its question; a failing non-canon artifact names
    every question it answered at a violation (the gate's contradiction included).
    """
    kinds = {cell.id: cell.question.kind for r in results for cell in r.cells}
    found: dict[str, Failing] = {}
    for flip in comparison.regressions:
        kind = kinds.get(flip.question, "principle")
        found.setdefault(flip.question, Failing(flip.question, flip.principle, kind))
    failing = {n.key for n in comparison.failures}
    for result in results:
        if result.key not in failing:
            continue
        for cell in result.cells:
            if cell.state == "answered" and cell.score is not None and cell.score <= SOLID_VIOLATED:
                q = cell.question
                found.setdefault(cell.id, Failing(cell.id, q.principle, q.kind))
    return tuple(found.values())


def _label(question: str, principle: str | None) -> str:
    return f"{question} [{principle}]" if principle else question


@dataclass(frozen=True, slots=True)
class AlignmentStatus:
    """How far the judge is validated on one question a check failed on."""

    question: str
    principle: str | None
    kappa: float | None  # None: not validated here (see ``line``)
    kappa_interval: tuple[float, float] | None
    n: int
    line: str  # the sentence reports print

    @property
    def label(self) -> str:
        """The question as reports show it: ``P2`` or ``P2 [escalate-refunds]``."""
        return _label(self.question, self.principle)

    def as_data(self) -> dict[str, Any]:
        """Plain data for ``--format json``."""
        interval = self.kappa_interval
        return {
            "question": self.question,
            "principle": self.principle,
            "validated": self.kappa is not None,
            "kappa": self.kappa,
            "kappa_interval": None if interval is None else list(interval),
            "n": self.n,
            "note": self.line,
        }


def alignment_statuses(
    failing: Sequence[Failing],
    records: Sequence[AlignmentRecord],
    provenance: Provenance,
) -> tuple[AlignmentStatus, ...]:
    """Per failing question, the judge's recorded agreement with people, or "not validated"."""
    record = next((r for r in records if r.provenance == provenance), None)
    found: list[AlignmentStatus] = []
    for question, principle, kind in failing:
        label = _label(question, principle)
        measured = None if record is None else record.kappa(question)
        if measured is None or measured[0] is None:
            why = _why(records, record, measured)
            what = "principle" if kind == "principle" else "question"
            line = f"judge not validated on this {what}: {label} ({why})"
            n = 0 if measured is None else measured[2]
            found.append(AlignmentStatus(question, principle, None, None, n, line))
            continue
        kappa, interval, n = measured
        shown = "" if interval is None else f" [{interval[0]:.2f}, {interval[1]:.2f}]"
        line = f"judge agrees with human labels on {label}: kappa {kappa:.2f}{shown}, n = {n}"
        found.append(AlignmentStatus(question, principle, kappa, interval, n, line))
    return tuple(found)


def _why(
    records: Sequence[AlignmentRecord],
    record: AlignmentRecord | None,
    measured: tuple[float | None, tuple[float, float] | None, int] | None,
) -> str:
    if record is None and records:
        return (
            "alignment was recorded only under another judge, rubric or constitution; "
            'run "canon align"'
        )
    if record is None:
        return 'no human labels recorded; run "canon align --labels FILE"'
    if measured is None:
        return 'no human labels for this question; add some and run "canon align"'
    return f"kappa is undefined on its {measured[2]} label(s): both raters gave one answer only"


def below_required(statuses: Sequence[AlignmentStatus], minimum: float) -> str | None:
    """Why ``--require-alignment minimum`` fails the run, or None when every kappa meets it."""
    for status in statuses:
        if status.kappa is None:
            return (
                f"the check failed on {status.label}, where the judge's agreement with human "
                f"labels is unmeasured under this judge, rubric and constitution "
                f'(--require-alignment {minimum:g}); run "canon align --labels FILE"'
            )
        if status.kappa < minimum:
            return (
                f"the check failed on {status.label}, where the judge agrees with human labels "
                f"only at kappa {status.kappa:.2f} (n = {status.n}), below --require-alignment "
                f"{minimum:g}; validate a better judge before trusting this verdict"
            )
    return None
