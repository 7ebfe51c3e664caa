"""Comparing a run with its baseline: per-question flips (Layer 1) and mean drift (Layer 2)."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from canon.core.baseline import Baseline
from canon.core.scoring import ArtifactResult, Cell
from canon.core.significance import DropTest, paired_drop_test, welch_drop_test
from canon.errors import UsageError

# A baseline cell is "solidly satisfied" and a current one "solidly violated" only with
# both a clear score and a confident judge; soft cells are too noisy to call a flip.
SOLID_SATISFIED = 0.75
SOLID_VIOLATED = 0.25
SOLID_CONFIDENCE = 0.7
DEFAULT_TOLERANCE = 0.02

FlipStatus = Literal["pending", "confirmed", "unconfirmed", "unavailable"]
Status = Literal["conforms", "regressed", "unavailable"]

REACCEPT = 'run "canon accept" to record this run as the new baseline'


class GateArgumentError(UsageError, ValueError):
    """``gate()`` was called with arguments it cannot check (e.g. no results at all)."""


@dataclass(frozen=True, slots=True)
class Flip:
    """A question that went from solidly satisfied to solidly violated on one artifact.

    ``pending`` until the judge is asked again; ``confirmed`` when the second answer is
    still a solid violation, ``unconfirmed`` when it is not, ``unavailable`` when the judge
    could not answer. Pending and confirmed flips count as regressions (fail closed).
    """

    key: str
    question: str
    text: str
    baseline_score: float
    baseline_confidence: float
    score: float
    confidence: float
    status: FlipStatus = "pending"

    @property
    def regression(self) -> bool:
        """Whether this flip fails the check."""
        return self.status in ("pending", "confirmed")


@dataclass(frozen=True, slots=True)
class NonCanon:
    """A current artifact that fails on its own, whatever the baseline says."""

    key: str
    reasons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Drift:
    """Layer 2: how the mean score moved, and whether the move is beyond noise."""

    baseline_mean: float | None
    current_mean: float | None
    tolerance: float
    test: DropTest

    @property
    def drop(self) -> float | None:
        """How far the mean fell (negative when it rose)."""
        return self.test.drop

    @property
    def regressed(self) -> bool:
        """The drop clears the tolerance and the significance test."""
        return self.drop is not None and self.drop > self.tolerance and self.test.beyond_noise

    @property
    def smallest_flaggable(self) -> float | None:
        """The smallest drop this check could have flagged: tolerance or test, the larger."""
        found = self.test.minimum_detectable
        return None if found is None else max(self.tolerance, found)


@dataclass(frozen=True, slots=True)
class Comparison:
    """The result of checking a run against its baseline."""

    checked: int
    matched: int
    new: tuple[str, ...]
    missing: tuple[str, ...]
    non_canon: tuple[NonCanon, ...]
    flips: tuple[Flip, ...]
    drift: Drift
    notes: tuple[str, ...]
    unscored: int  # questions the judge left unanswered in this run

    @property
    def regressions(self) -> tuple[Flip, ...]:
        """Flips that fail the check (confirmed, or not yet re-asked)."""
        return tuple(f for f in self.flips if f.regression)

    @property
    def failed(self) -> bool:
        """Whether there is real evidence of a regression or a non-canon artifact."""
        return bool(self.non_canon or self.regressions or self.drift.regressed)

    @property
    def status(self) -> Status:
        """conforms, regressed, or unavailable (the judge left questions unanswered)."""
        if self.failed:
            return "regressed"
        if self.unscored or any(f.status == "unavailable" for f in self.flips):
            return "unavailable"
        return "conforms"


def solidly_satisfied(score: float | None, confidence: float | None) -> bool:
    """A confident, clearly satisfied answer."""
    return (
        score is not None
        and confidence is not None
        and score >= SOLID_SATISFIED
        and confidence >= SOLID_CONFIDENCE
    )


def solidly_violated(score: float | None, confidence: float | None) -> bool:
    """A confident, clearly violated answer."""
    return (
        score is not None
        and confidence is not None
        and score <= SOLID_VIOLATED
        and confidence >= SOLID_CONFIDENCE
    )


def gate(
    results: Sequence[ArtifactResult],
    baseline: Baseline,
    threshold: float,
    tolerance: float = DEFAULT_TOLERANCE,
) -> Comparison:
    """Compare a run with its baseline; flips stay pending until ``confirm_flips``."""
    if not results:
        raise GateArgumentError(
            "gate() got no results; a check that passes because nothing was checked is "
            "never a pass: score at least one artifact"
        )
    for name, value in (("threshold", threshold), ("tolerance", tolerance)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise GateArgumentError(f"gate(): {name} must be a number in [0, 1], got {value!r}")
    keys = [r.key for r in results]
    if len(set(keys)) != len(keys):
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        raise GateArgumentError(f"gate(): artifact keys repeat: {', '.join(repeated)}")
    records = baseline.artifacts
    new = tuple(sorted(k for k in keys if k not in records))
    present = set(keys)
    missing = tuple(sorted(k for k in records if k not in present))
    notes: list[str] = []
    if baseline.legacy:
        notes.append(
            f"the baseline is format {baseline.format} (overall scores only), so the "
            f"per-question check (Layer 1) was skipped; {REACCEPT} with per-question scores"
        )
    if new:
        notes.append(f"{len(new)} new artifact(s) with nothing to regress from: {', '.join(new)}")
    if missing:
        notes.append(f"{len(missing)} recorded artifact(s) not in this run: {', '.join(missing)}")
    flips, layer1_notes = _layer1(results, baseline)
    notes.extend(layer1_notes)
    drift = _layer2(results, baseline, tolerance)
    if drift.test.method == "none":
        notes.append(f"mean drift (Layer 2) not tested: {drift.test.detail}")
    return Comparison(
        checked=len(results),
        matched=len(keys) - len(new),
        new=new,
        missing=missing,
        non_canon=tuple(n for r in results if (n := _non_canon(r, threshold)) is not None),
        flips=flips,
        drift=drift,
        notes=tuple(notes),
        unscored=sum(len(r.unscored) for r in results),
    )


def _non_canon(result: ArtifactResult, threshold: float) -> NonCanon | None:
    reasons: list[str] = []
    if result.stopped_by is not None:
        reasons.extend(result.reasons)
    else:
        if result.gated:
            nscp = (r for r in result.reasons if r.startswith("NSCP"))
            reasons.append(next(nscp, "NSCP gate: the judge found a contradiction"))
        if result.score is not None and result.score < threshold:
            reasons.append(f"score {result.score:.3f} is below the threshold {threshold:.3f}")
        if result.score is None and not result.unscored:
            reasons.append("no question applied to this artifact")
    return NonCanon(result.key, tuple(reasons)) if reasons else None


def _layer1(
    results: Sequence[ArtifactResult], baseline: Baseline
) -> tuple[tuple[Flip, ...], list[str]]:
    flips: list[Flip] = []
    changed: dict[str, tuple[str | None, str | None, list[str]]] = {}
    for result in results:
        record = baseline.artifacts.get(result.key)
        if record is None or record.questions is None:
            continue
        recorded = record.questions
        for cell in result.cells:
            question = cell.question
            before = recorded.get(question.id)
            if before is None:
                continue
            if before.subject != question.subject:
                # Question ids are positional: P1 now asks about another principle.
                changed.setdefault(question.id, (before.subject, question.subject, []))[2].append(
                    result.key
                )
                continue
            if (
                cell.state == "answered"
                and before.state == "answered"
                and solidly_violated(cell.score, cell.confidence)
                and solidly_satisfied(before.score, before.confidence)
            ):
                flips.append(
                    Flip(
                        key=result.key,
                        question=question.id,
                        text=question.subject or question.text,
                        baseline_score=before.score,  # type: ignore[arg-type]  # checked solid
                        baseline_confidence=before.confidence,  # type: ignore[arg-type]
                        score=cell.score,  # type: ignore[arg-type]
                        confidence=cell.confidence,  # type: ignore[arg-type]
                    )
                )
    notes = [
        f"question {qid} asks about a different principle than in the baseline "
        f"(was {old!r}, now {now!r}); skipped for {len(keys)} artifact(s); {REACCEPT}"
        for qid, (old, now, keys) in sorted(changed.items())
    ]
    return tuple(flips), notes


def _layer2(results: Sequence[ArtifactResult], baseline: Baseline, tolerance: float) -> Drift:
    before: list[float] = []
    after: list[float] = []
    for result in results:
        record = baseline.artifacts.get(result.key)
        if record is not None and record.score is not None and result.score is not None:
            before.append(record.score)
            after.append(result.score)
    if before:
        test = paired_drop_test(before, after)
    else:
        before = [r.score for r in baseline.artifacts.values() if r.score is not None]
        after = [r.score for r in results if r.score is not None]
        test = welch_drop_test(before, after)
    return Drift(
        baseline_mean=statistics.fmean(before) if before else None,
        current_mean=statistics.fmean(after) if after else None,
        tolerance=float(tolerance),
        test=test,
    )


def confirm_flips(comparison: Comparison, reasked: Mapping[tuple[str, str], Cell]) -> Comparison:
    """Settle pending flips with the judge's second answers, keyed by (artifact, question)."""
    flips: list[Flip] = []
    notes = list(comparison.notes)
    for flip in comparison.flips:
        cell = reasked.get((flip.key, flip.question))
        if flip.status != "pending" or cell is None:
            flips.append(flip)
            continue
        if cell.state == "unscored":
            status: FlipStatus = "unavailable"
            notes.append(
                f"{flip.key} {flip.question} flipped to violated, but re-asking the judge "
                f"failed ({cell.error}); the flip is unconfirmed"
            )
        elif cell.state == "answered" and solidly_violated(cell.score, cell.confidence):
            status = "confirmed"
        else:
            status = "unconfirmed"
            notes.append(
                f"{flip.key} {flip.question} flipped to violated once, but the judge did not "
                "repeat it when asked again; treated as noise"
            )
        flips.append(dataclasses.replace(flip, status=status))
    return dataclasses.replace(comparison, flips=tuple(flips), notes=tuple(notes))


def provenance_notes(baseline: Baseline, *, judge: str, constitution: str) -> tuple[str, ...]:
    """Notes when the judge or constitution differs from the one the baseline recorded."""
    notes: list[str] = []
    if baseline.judge is not None and baseline.judge != judge:
        notes.append(
            f"the baseline was recorded with judge {baseline.judge!r}; this run used "
            f"{judge!r}, so differences may come from the judge"
        )
    if baseline.constitution is not None and baseline.constitution != constitution:
        notes.append(
            "the constitution changed since the baseline was recorded; if that was intended, "
            f"{REACCEPT}"
        )
    return tuple(notes)
