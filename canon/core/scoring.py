"""Scoring: judge answers become question cells, cells become an artifact's verdict."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from canon.core.gate_outcome import GateOutcome
from canon.core.outcome import (
    NO_QUESTION,
    Note,
    NoteKind,
    Reason,
    ReasonKind,
    as_note,
    as_reason,
    below_reason,
    nscp_reason,
    refused_reason,
    unscored_reason,
)
from canon.core.rubric import Question
from canon.core.usage import Usage
from canon.errors import JudgeError, UsageError

# "refused": the judge declined to judge the question (a safety refusal). Never a pass and
# never an outage: the artifact cannot be canon on it, yet it says nothing about the agent.
CellState = Literal["answered", "na", "unscored", "refused"]

# The gate trips when at least this much of the judge's mass says "contradiction":
# an even split is not evidence of coherence, so it fails closed.
GATE_TRIP_MASS = 0.5


@dataclass(frozen=True, slots=True)
class Answer:
    """A judge's answer to one question: probability mass per choice label."""

    distribution: Mapping[str, float]
    rationale: str | None = None
    # What the call(s) spent; None when no call was made. Not part of the answer's value:
    # the same answer read back from the cache is the same answer.
    usage: Usage | None = field(default=None, compare=False)


class Look(NamedTuple):
    """One answer behind a cell that holds several: which response it was about and which
    of the question's fixed wordings asked it (its choice order is that wording's,
    ``canon.core.prompt.choice_order``)."""

    response: int  # the replicate, 0 for an artifact of one response
    wording: int  # 0 is the question's own text, k its k-th fixed alternative
    distribution: tuple[tuple[str, float], ...]


class Cell(NamedTuple):
    """One question's outcome for one artifact.

    A NamedTuple rather than a frozen dataclass: a large run builds hundreds of thousands of
    cells, and a frozen dataclass sets every field through ``object.__setattr__``, which
    cost more than the scoring itself.
    """

    question: Question
    state: CellState
    score: float | None = None  # expected choice score, n/a mass excluded
    confidence: float | None = None  # mass of the modal choice
    distribution: tuple[tuple[str, float], ...] = ()
    rationale: str | None = None
    error: str | None = None  # why the judge could not answer (unscored and refused cells)
    usage: Usage | None = None  # what answering it spent; None when no call was made
    error_type: str | None = None  # the class of that failure (an exception name), if known
    # Every answer the first pass got for the cell when it got more than one (a decision
    # judge answers every wording about every response in one call per response; replicates
    # give one answer per response); ``distribution`` is the mean over responses of the mean
    # over each response's looks. Empty: ``distribution`` is the cell's one answer.
    looks: tuple[Look, ...] = ()

    @property
    def id(self) -> str:
        """The question id (``G``, a facet id, ``P1`` …)."""
        return self.question.id


def cell_reason(cell: Cell) -> str | None:
    """What a report shows as a cell's reason: the judge's own words, or, from a judge that
    gives none (a decision model), the probabilities behind the answer, per wording (and
    response), so a reader sees how firmly and how consistently it answered."""
    if cell.rationale or not cell.looks:
        return cell.rationale
    several = len({look.response for look in cell.looks}) > 1
    parts = []
    for look in cell.looks:
        where = f"wording {look.wording + 1}"
        if several:
            where = f"response {look.response + 1} {where}"
        top = sorted(look.distribution, key=lambda pair: (-pair[1], pair[0]))[:2]
        parts.append(f"{where}: " + ", ".join(f"{label} {mass:.2f}" for label, mass in top))
    return "no reason given; the judge's probabilities, " + "; ".join(parts)


def looks_data(cell: Cell) -> list[dict[str, object]]:
    """A cell's looks as plain data for JSON: response, wording and probabilities."""
    return [
        {
            "response": look.response,
            "wording": look.wording,
            "probabilities": {label: round(mass, 6) for label, mass in look.distribution},
        }
        for look in cell.looks
    ]


@dataclass(frozen=True, slots=True)
class ArtifactResult:
    """The verdict on one artifact and everything that led to it."""

    key: str
    canon: bool
    score: float | None  # after the NSCP cap; None when no judge was asked
    raw_score: float | None  # the plain mean of applicable questions
    gated: bool  # the NSCP gate tripped
    threshold: float
    cells: tuple[Cell, ...] = ()
    gates: tuple[GateOutcome, ...] = ()
    # Why it is non-canon, most important first: each a coded Reason (canon.core.outcome)
    # that is also its English line.
    reasons: tuple[Reason, ...] = ()
    notes: tuple[Note, ...] = ()  # worth knowing, not failures (e.g. a contract WARN)
    # Settled by confirmation (canon.core.settle): whether the score is below the threshold
    # beyond judge noise. None when nothing was settled and the plain score speaks.
    below_threshold: bool | None = None
    # What confirmation re-asks about this artifact spent (None: none were asked of a model).
    reask_usage: Usage | None = None
    # Principle questions whose worst answer, confirmed by re-asks, fails the artifact
    # outright (canon.core.settle); a first pass alone never sets it.
    violated: tuple[str, ...] = ()
    digest: str | None = None  # the digest of the artifact's text (canon.core.artifact)

    def __post_init__(self) -> None:
        # Plain strings from a caller's own results become coded values (failing closed).
        if not all(type(r) is Reason for r in self.reasons):
            object.__setattr__(self, "reasons", tuple(map(as_reason, self.reasons)))
        if not all(type(n) is Note for n in self.notes):
            object.__setattr__(self, "notes", tuple(map(as_note, self.notes)))

    @property
    def stopped_by(self) -> str | None:
        """The deterministic gate that stopped the artifact before the judge, if any."""
        return next((g.gate for g in self.gates if g.stops), None)

    @property
    def unscored(self) -> tuple[Cell, ...]:
        """Cells the judge failed to answer."""
        return tuple(c for c in self.cells if c.state == "unscored")

    @property
    def refused(self) -> tuple[Cell, ...]:
        """Cells the judge refused to judge."""
        return tuple(c for c in self.cells if c.state == "refused")

    def cell(self, question_id: str) -> Cell:
        """The cell for a question id."""
        for cell in self.cells:
            if cell.id == question_id:
                return cell
        raise KeyError(question_id)

    def lowest(self, count: int = 3) -> tuple[Cell, ...]:
        """The lowest-scoring answered questions, worst first."""
        answered = [c for c in self.cells if c.state == "answered" and c.score is not None]
        answered.sort(key=lambda c: (c.score, c.id))
        return tuple(answered[:count])


def check_threshold(threshold: object) -> float:
    """Validate a threshold value: a number in [0, 1]."""
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise UsageError(f"threshold must be a number in [0, 1], got {threshold!r}")
    if not 0.0 <= float(threshold) <= 1.0:
        raise UsageError(f"threshold must be in [0, 1], got {threshold}")
    return float(threshold)


def score_cell(question: Question, answer: Answer) -> Cell:
    """Turn a judge's answer into a cell: normalized score, confidence and state."""
    # This runs once per question per artifact, so the common one-choice answer (a single
    # sample, or a scripted judge) takes a short path.
    if len(answer.distribution) == 1:
        ((label, mass),) = answer.distribution.items()
        choice = question.choice(label if type(label) is str else str(label))
        if choice is not None and type(mass) is float and 0.0 < mass < math.inf:
            if choice.score is None:
                if question.kind == "gate":
                    raise JudgeError(
                        f"question {question.id}: the gate question cannot be answered n/a"
                    )
                single = ((choice.label, 1.0),)
                return Cell(question, "na", None, 1.0, single, answer.rationale, usage=answer.usage)
            single = ((choice.label, 1.0),)
            return Cell(
                question,
                "answered",
                choice.score,
                1.0,
                single,
                answer.rationale,
                usage=answer.usage,
            )
    merged: dict[str, float] = {}
    for label, mass in answer.distribution.items():
        choice = question.choice(str(label))
        if choice is None:
            allowed = ", ".join(c.label for c in question.choices)
            raise JudgeError(
                f"question {question.id}: the judge answered {label!r}, "
                f"which is not one of its choices ({allowed})"
            )
        if type(mass) is not float:
            mass = _check_mass(question, label, mass)
        if not 0.0 <= mass < math.inf:
            raise JudgeError(
                f"question {question.id}: mass for {label!r} must be a finite number >= 0, "
                f"got {mass}"
            )
        merged[choice.label] = merged.get(choice.label, 0.0) + mass
    total = sum(merged.values())
    if total <= 0.0:
        raise JudgeError(f"question {question.id}: the judge gave no answer mass to any choice")
    scored_mass = 0.0
    weighted = 0.0
    for label, mass in merged.items():
        score = question.choice(label).score  # type: ignore[union-attr]  # label came from it
        if score is not None:
            scored_mass += mass
            weighted += mass * score
    if question.kind == "gate" and scored_mass < total:
        raise JudgeError(f"question {question.id}: the gate question cannot be answered n/a")
    distribution = tuple(sorted((label, mass / total) for label, mass in merged.items()))
    confidence = max(merged.values()) / total
    if scored_mass <= 0.0:
        return Cell(
            question, "na", None, confidence, distribution, answer.rationale, usage=answer.usage
        )
    return Cell(
        question,
        "answered",
        weighted / scored_mass,
        confidence,
        distribution,
        answer.rationale,
        usage=answer.usage,
    )


def _check_mass(question: Question, label: object, mass: object) -> float:
    if isinstance(mass, bool) or not isinstance(mass, int | float):
        raise JudgeError(f"question {question.id}: mass for {label!r} is not a number")
    return float(mass)


def unscored_cell(
    question: Question,
    reason: str,
    usage: Usage | None = None,
    error_type: str | None = None,
) -> Cell:
    """A cell for a question the judge could not answer; never a pass, never n/a."""
    return Cell(question, "unscored", error=reason, usage=usage, error_type=error_type)


def refused_cell(question: Question, reason: str, usage: Usage | None = None) -> Cell:
    """A cell for a question the judge refused to judge; never a pass, never an outage."""
    return Cell(question, "refused", error=reason, usage=usage, error_type="JudgeRefusedError")


REFUSAL_NOTE = "not canon until a person or another judge decides; no evidence against the agent"


def gate_tripped(cell: Cell) -> bool:
    """Whether the NSCP gate question says the artifact contradicts the constitution."""
    if cell.state != "answered" or cell.score is None:
        return False
    contradiction = sum(
        mass
        for label, mass in cell.distribution
        if (choice := cell.question.choice(label)) is not None and choice.score == 0.0
    )
    return contradiction >= GATE_TRIP_MASS


def plainly_violated(cell: Cell) -> bool:
    """Whether a principle question's answer is mostly its worst choice (a plain violation).

    Like the NSCP gate, a plain violation fails the artifact whatever its average: with one
    principle, a "no" on it still averages 6/7 over the rubric. A "partly" stays a score.
    """
    if cell.question.kind != "principle" or cell.state != "answered" or cell.score is None:
        return False
    worst = min(c.score for c in cell.question.choices if c.score is not None)
    mass = sum(
        m
        for label, m in cell.distribution
        if (choice := cell.question.choice(label)) is not None and choice.score == worst
    )
    return mass >= GATE_TRIP_MASS


def violation_reason(cell: Cell, confirmed: bool = False) -> Reason:
    """Why a plainly violated principle fails its artifact."""
    text = f"principle {cell.id} plainly violated: {cell_label(cell)}"
    return Reason(
        ReasonKind.VIOLATED,
        text + (" (confirmed)" if confirmed else ""),
        question=cell.id,
        principle=cell.question.principle,
        confirmed=confirmed,
    )


def judge_verdict(
    key: str,
    cells: Sequence[Cell],
    threshold: float,
    gates: Sequence[GateOutcome] = (),
) -> ArtifactResult:
    """Combine an artifact's cells into its verdict, applying the NSCP gate and threshold."""
    applicable = [c.score for c in cells if c.state == "answered" and c.score is not None]
    raw = sum(applicable) / len(applicable) if applicable else None
    gate_cells = [c for c in cells if c.question.kind == "gate"]
    gated = any(gate_tripped(c) for c in gate_cells)
    score = raw
    reasons: list[Reason] = []
    if gated:
        cap = min(c.score for c in gate_cells if c.score is not None)
        score = cap if raw is None else min(raw, cap)
        reasons.append(nscp_reason(gate_cells[0].question))
    refused = [c.id for c in cells if c.state == "refused"]
    if refused:
        reasons.append(refused_reason(refused, len(cells), REFUSAL_NOTE))
    unscored = [c.id for c in cells if c.state == "unscored"]
    if unscored:
        reasons.append(unscored_reason(unscored, len(cells)))
    if score is None:
        if not unscored and not refused:
            reasons.append(NO_QUESTION)
    elif score < threshold:
        reasons.append(below_reason(score, threshold))
    notes = tuple(_gate_notes(gates))
    return ArtifactResult(
        key=key,
        canon=not reasons,
        score=score,
        raw_score=raw,
        gated=gated,
        threshold=threshold,
        cells=tuple(cells),
        gates=tuple(gates),
        reasons=tuple(reasons),
        notes=notes,
    )


def fails_on_evidence(result: ArtifactResult) -> bool:
    """Whether an artifact is non-canon on evidence, not merely because the judge was down.

    A gate that stopped it, a tripped NSCP gate, a question the judge refused (fail closed),
    a plainly violated principle, a score below the threshold, or no applicable question at
    all; unscored questions alone are not evidence (CI may retry).
    """
    if result.stopped_by is not None or result.gated or result.refused or result.violated:
        return True
    if result.score is None:
        return not result.unscored
    if result.below_threshold is not None:
        return result.below_threshold
    return result.score < result.threshold


def stopped_verdict(key: str, threshold: float, gates: Sequence[GateOutcome]) -> ArtifactResult:
    """The verdict on an artifact a deterministic gate stopped before any judge call."""
    reasons = tuple(
        Reason(
            ReasonKind.GATE_FAILED,
            f"{g.gate} gate failed: {'; '.join(g.reasons) or 'no reason given'}",
            gate=g.gate,
        )
        for g in gates
        if g.stops
    )
    return ArtifactResult(
        key=key,
        canon=False,
        score=None,
        raw_score=None,
        gated=False,
        threshold=threshold,
        gates=tuple(gates),
        reasons=reasons,
        notes=tuple(_gate_notes(gates)),
    )


_GATE_NOTES = {
    "warn": ("warning", NoteKind.GATE_WARNING),
    "skip": ("skipped", NoteKind.GATE_SKIPPED),
}


def _gate_notes(gates: Sequence[GateOutcome]) -> list[Note]:
    return [
        Note(
            _GATE_NOTES[g.status][1],
            f"{g.gate} gate {_GATE_NOTES[g.status][0]}: {'; '.join(g.reasons) or 'no detail'}",
            gate=g.gate,
        )
        for g in gates
        if g.status in _GATE_NOTES
    ]


def failure_message(result: ArtifactResult) -> str:
    """The text of the AssertionError raised for a non-canon artifact."""
    lines = [f"non-canon artifact {result.key}: " + "; ".join(result.reasons)]
    for cell in result.refused:
        lines.append(f"  {cell.id} refused by the judge: {reason_excerpt(cell)}")
    # Only questions below full marks: a perfect score explains nothing about a failure.
    lowest = [c for c in shortfalls(result) if c.state == "answered"][:3]
    if lowest:
        lines.append("lowest-scoring questions:")
        for cell in lowest:
            lines.append(f"  {cell.id} ({cell.score:.2f}): {cell_label(cell)}")
            reason = reason_excerpt(cell)
            if reason is not None:
                lines.append(f"    judge's reason: {reason}")
    return "\n".join(lines)


def falls_short(cell: Cell) -> bool:
    """Whether a cell did not pass: unscored, refused, or answered below full marks."""
    if cell.state in ("unscored", "refused"):
        return True
    return cell.state == "answered" and cell.score is not None and cell.score < 1.0


def shortfalls(result: ArtifactResult) -> tuple[Cell, ...]:
    """The cells that did not pass, unscored and refused ones first, then the lowest-scoring."""
    short = [c for c in result.cells if falls_short(c)]
    return tuple(sorted(short, key=lambda c: -1.0 if c.score is None else c.score))


def shown_score(cell: Cell) -> str:
    """A cell's score as reports print it: ``0.50``, ``unscored`` or ``judge refused``."""
    if cell.state == "refused":
        return "judge refused"
    return "unscored" if cell.score is None else f"{cell.score:.2f}"


def cell_label(cell: Cell) -> str:
    """What a cell asked about: a principle's own text, else the question's text."""
    return cell.question.subject or cell.question.text


def reason_excerpt(cell: Cell, width: int = 160) -> str | None:
    """The judge's reason for a cell on one line, cut to ``width`` characters; None when
    it gave none (a scripted judge). An unscored or refused cell's reason is the failure or
    the refusal; a decision model's, its probabilities (``cell_reason``)."""
    reason = cell.error if cell.state in ("unscored", "refused") else cell_reason(cell)
    if not reason or not reason.strip():
        return None
    flat = " ".join(reason.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def relevant_questions(
    result: ArtifactResult, *, report_excluded: bool = False
) -> tuple[Question, ...] | tuple[tuple[Question, ...], tuple[str, ...]]:
    """Questions that applied to the artifact; with ``report_excluded``, also the
    principles the judge ruled out of play (answered n/a), as ``(kept, excluded)``."""
    kept = tuple(c.question for c in result.cells if c.state == "answered")
    if not report_excluded:
        return kept
    excluded = tuple(
        c.question.subject
        for c in result.cells
        if c.state == "na" and c.question.kind == "principle" and c.question.subject is not None
    )
    return kept, excluded
