"""Coded outcomes: why an artifact is non-canon (a ``Reason``) and what is worth knowing
(a ``Note``), each a kind from an enum plus the facts it is about.

Code decides by ``kind`` (and the data), never by reading the English: a reason or note is
also its one-line English rendering (a ``str``), so reports print it as it is and users'
code that joins or prints ``result.reasons`` keeps working. ``tests/test_outcome_codes.py``
greps ``canon/core`` and ``canon/report`` so that no decision by text matching comes back.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

from canon.core.rubric import Question


class ReasonKind(enum.Enum):
    """Why an artifact is not canon."""

    GATE_FAILED = "gate_failed"  # a deterministic gate (policy, contract) stopped it
    NSCP = "nscp"  # the judge found a contradiction of the constitution
    VIOLATED = "violated"  # a principle plainly violated
    REFUSED = "refused"  # the judge refused to judge (fails closed; no evidence against it)
    BELOW_THRESHOLD = "below_threshold"  # the score is below the threshold
    NO_QUESTION = "no_question"  # no question applied to the artifact
    UNSCORED = "unscored"  # the judge failed to answer: no evidence, CI may retry
    # below the threshold on the answered questions only, while others are unscored
    PARTIAL_SCORE = "partial_score"
    OTHER = "other"  # a plain string a caller put in a result: evidence (fail closed)

    @property
    def is_evidence(self) -> bool:
        """Whether this reason is evidence against the artifact (an outage is not)."""
        return self not in (ReasonKind.UNSCORED, ReasonKind.PARTIAL_SCORE)


class NoteKind(enum.Enum):
    """Something worth knowing about an artifact or a check that does not fail it."""

    GATE_WARNING = "gate_warning"
    GATE_SKIPPED = "gate_skipped"
    GATE_UNCONFIRMED = "gate_unconfirmed"  # the NSCP gate tripped once, not beyond noise
    VIOLATION_UNCONFIRMED = "violation_unconfirmed"
    THRESHOLD_UNCONFIRMED = "threshold_unconfirmed"
    LEGACY_BASELINE = "legacy_baseline"  # format without per-question scores
    SINGLE_ASK_BASELINE = "single_ask_baseline"  # a baseline whose answers were asked once
    NEW_ARTIFACTS = "new_artifacts"
    MISSING_ARTIFACTS = "missing_artifacts"
    PARTIAL_CHECK = "partial_check"  # --select/--limit left baseline artifacts out
    DRIFT_NOT_TESTED = "drift_not_tested"
    JUDGE_DISAGREEMENT = "judge_disagreement"  # non-canon now on an unchanged text
    NOISY_JUDGE = "noisy_judge"
    PRINCIPLE_CHANGED = "principle_changed"
    FLIP_UNCONFIRMED = "flip_unconfirmed"
    FLIP_INCONCLUSIVE = "flip_inconclusive"
    FLIP_UNAVAILABLE = "flip_unavailable"
    FLIP_UNCHANGED = "flip_unchanged"
    FLIP_UNSETTLED = "flip_unsettled"
    JUDGE_CHANGED = "judge_changed"
    CONSTITUTION_CHANGED = "constitution_changed"
    INPUT_CHANGED = "input_changed"  # an artifact answers another request than its record
    # The run could not have seen a regression (the check is inconclusive, pass or fail):
    UNCONFIRMABLE = "unconfirmable"  # no failure could reach the evidence the rule needs
    JUDGE_SPLIT = "judge_split"  # the judge stayed split on a cell a verdict hung on
    RESPONSES_MISREAD = "responses_misread"  # responses misread beyond the assumed flip rate
    OTHER = "other"  # a plain string a caller put in a result or comparison

    @property
    def advises_reaccept(self) -> bool:
        """Whether the note's remedy is recording this run as the new baseline."""
        return self in _REACCEPT_NOTES

    @property
    def blinds(self) -> bool:
        """Whether the note says the run could not have seen a regression: such a check is
        inconclusive whether or not something would fail."""
        return self in _BLIND_NOTES


_REACCEPT_NOTES = frozenset(
    {
        NoteKind.LEGACY_BASELINE,
        NoteKind.SINGLE_ASK_BASELINE,
        NoteKind.PRINCIPLE_CHANGED,
        NoteKind.FLIP_UNSETTLED,
        NoteKind.CONSTITUTION_CHANGED,
        NoteKind.INPUT_CHANGED,
    }
)
_BLIND_NOTES = frozenset({NoteKind.UNCONFIRMABLE, NoteKind.JUDGE_SPLIT, NoteKind.RESPONSES_MISREAD})


class _Coded(str):
    """A line of English that carries its code: ``kind`` and ``data`` (the facts it names)."""

    kind: Any
    data: dict[str, Any]

    def __new__(cls, kind: Any, text: str, **data: Any) -> Any:
        made = super().__new__(cls, text)
        made.kind = kind
        made.data = data
        return made

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return _rebuild, (type(self), self.kind, str(self), self.data)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.kind}, {str(self)!r})"

    @property
    def code(self) -> str:
        """The kind's stable name, as JSON outputs give it."""
        return str(self.kind.value)


def _rebuild(cls: type[_Coded], kind: Any, text: str, data: dict[str, Any]) -> _Coded:
    made: _Coded = cls(kind, text, **data)
    return made


class Reason(_Coded):
    """Why an artifact is non-canon: a ``ReasonKind`` and its facts, rendered as one line."""

    kind: ReasonKind

    def __new__(cls, kind: ReasonKind, text: str, **data: Any) -> Reason:
        made: Reason = super().__new__(cls, kind, text, **data)
        return made


class Note(_Coded):
    """A note that does not fail anything: a ``NoteKind`` and its facts, rendered as one line."""

    kind: NoteKind

    def __new__(cls, kind: NoteKind, text: str, **data: Any) -> Note:
        made: Note = super().__new__(cls, kind, text, **data)
        return made


def as_reason(reason: str) -> Reason:
    """A reason as a coded value; a plain string is kind OTHER (evidence: fail closed)."""
    return reason if isinstance(reason, Reason) else Reason(ReasonKind.OTHER, str(reason))


def as_note(note: str) -> Note:
    """A note as a coded value; a plain string is kind OTHER."""
    return note if isinstance(note, Note) else Note(NoteKind.OTHER, str(note))


def nscp_reason(question: Question) -> Reason:
    """Why a tripped NSCP gate fails its artifact."""
    return Reason(
        ReasonKind.NSCP,
        f"NSCP gate: the judge found a contradiction ({question.id}: {question.text})",
        question=question.id,
    )


def below_reason(score: float, threshold: float) -> Reason:
    """A score below the threshold, as a reason."""
    return Reason(
        ReasonKind.BELOW_THRESHOLD,
        f"score {score:.3f} is below the threshold {threshold:.3f}",
        score=score,
        threshold=threshold,
    )


def refused_reason(ids: list[str], asked: int, why: str) -> Reason:
    """The judge refused the questions ``ids`` of ``asked``."""
    return Reason(
        ReasonKind.REFUSED,
        f"judge refused {len(ids)} of {asked} questions ({', '.join(ids)}): {why}",
        questions=tuple(ids),
    )


def unscored_reason(ids: list[str], asked: int) -> Reason:
    """The judge failed to answer the questions ``ids`` of ``asked``."""
    return Reason(
        ReasonKind.UNSCORED,
        f"{len(ids)} of {asked} questions unscored (judge failed: {', '.join(ids)})",
        questions=tuple(ids),
    )


NO_QUESTION = Reason(ReasonKind.NO_QUESTION, "no question applied to this artifact")


def grouped(lines: tuple[str, ...] | list[str]) -> list[tuple[str, int]]:
    """Repeated lines said once with how many times they occurred, in first-seen order."""
    counts: dict[str, int] = {}
    for line in lines:
        counts[str(line)] = counts.get(str(line), 0) + 1
    return list(counts.items())
