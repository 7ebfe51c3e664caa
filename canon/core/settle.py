"""Settling an artifact's verdict on confirmed evidence only.

A first pass gives every question one answer. Which low answers a failing verdict hangs on
is decided here, and once their evidence is in (``canon.core.evidence``), the verdict is
rebuilt from pooled answers with only the *confirmed* failures counting: a tripped NSCP gate
whose claim was confirmed, or a score that stays below the threshold even when every cell
that is not confirmed low takes its best possible value (unscored cells included, so a
partial judge outage is never evidence).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from canon.core.evidence import Evidence
from canon.core.outcome import (
    NO_QUESTION,
    Note,
    NoteKind,
    Reason,
    ReasonKind,
    nscp_reason,
)
from canon.core.scoring import (
    ArtifactResult,
    Cell,
    Look,
    gate_tripped,
    judge_verdict,
    plainly_violated,
    violation_reason,
)
from canon.core.stats import wilson_ci

# A baseline cell was "solidly satisfied" with a clear score and a confident judge; a
# current cell at or below SOLID_VIOLATED is a flip worth testing.
SOLID_SATISFIED = 0.75
SOLID_VIOLATED = 0.25
SOLID_CONFIDENCE = 0.7
# A passing answer that still puts this much mass on a failing choice (a gate contradiction,
# a principle's worst choice) is re-asked: with logprobs or samples a real contradiction
# often shows as a minority mass before it shows as the top answer.
MATERIAL_MASS = 0.2
# Responses read beside others before their misreading rate is measured, not assumed.
MIN_READINGS = 30
STRICT_Z = 2.576  # the 99 % interval's z: a measured rate is used at its upper end


def by_response(looks: Sequence[Look]) -> dict[int, list[Look]]:
    """A cell's looks grouped by the response they were about, in response order."""
    grouped: dict[int, list[Look]] = {}
    for look in sorted(looks, key=lambda found: found.response):
        grouped.setdefault(look.response, []).append(look)
    return grouped


def violated_labels(cell: Cell) -> frozenset[str]:
    """The labels that read a cell as violated (score at or below SOLID_VIOLATED)."""
    return frozenset(
        c.label for c in cell.question.choices if c.score is not None and c.score <= SOLID_VIOLATED
    )


def response_strays(results: Sequence[ArtifactResult]) -> tuple[int, int]:
    """How often one response reads a cell as violated where every other response of the
    cell reads it otherwise: (strays, readings), over the cells with several responses.

    A response's reading is the share of its looks (wordings) that put most mass on a
    violated label; strays are those readings summed (rounded up). This is the rate at
    which a reworded text is misread as a violation: the null rate of a response unit.
    """
    total = 0.0
    readings = 0
    for result in results:
        for cell in result.cells:
            if cell.state != "answered" or not cell.looks:
                continue
            groups = by_response(cell.looks)
            if len(groups) < 2:
                continue
            bad = violated_labels(cell)
            shares = {
                response: sum(1.0 for look in looks if _mass(look, bad) > 0.5) / len(looks)
                for response, looks in groups.items()
            }
            for response, share in shares.items():
                if all(other == 0.0 for r, other in shares.items() if r != response):
                    total += share
                    readings += 1
    return math.ceil(total - 1e-9), readings


def _mass(look: Look, labels: frozenset[str]) -> float:
    return sum(mass for label, mass in look.distribution if label in labels)


def unit_flip_rate(strays: int, readings: int, assumed: float) -> float:
    """The flip rate a response unit is tested at: the rate the decision rule assumes, or the
    measured misreading rate at the upper end of its 99 % interval when enough responses
    were read side by side to show it lower (a rate measured above the assumed one is
    ``too_noisy``: the check is inconclusive)."""
    if readings < MIN_READINGS:
        return assumed
    return min(assumed, max(1e-4, wilson_ci(strays, readings, STRICT_Z)[1]))


def too_noisy(strays: int, readings: int, assumed: float) -> bool:
    """Responses misread beyond doubt more often than the decision rule assumes."""
    return readings >= MIN_READINGS and wilson_ci(strays, readings, STRICT_Z)[0] > assumed


def gate_suspects(result: ArtifactResult, material: bool = False) -> tuple[str, ...]:
    """Gate questions whose first answer tripped the NSCP gate (or, with ``material``, gave
    the contradiction material mass)."""
    return tuple(
        c.id
        for c in result.cells
        if c.question.kind == "gate"
        and (gate_tripped(c) or (material and worst_mass(c) >= MATERIAL_MASS))
    )


def worst_mass(cell: Cell) -> float:
    """The answer's mass on the question's worst-scoring choice (0 for unanswered cells)."""
    if cell.state != "answered":
        return 0.0
    worst = worst_labels(cell)
    return sum(m for label, m in cell.distribution if label in worst)


def worst_labels(cell: Cell) -> frozenset[str]:
    """The labels of the question's worst-scoring choice (a contradiction, a plain "no")."""
    scores = [c.score for c in cell.question.choices if c.score is not None]
    low = min(scores, default=0.0)
    return frozenset(c.label for c in cell.question.choices if c.score == low)


def violation_suspects(result: ArtifactResult, material: bool = False) -> tuple[str, ...]:
    """Principle questions answered at their worst choice (or, with ``material``, with
    material mass on it)."""
    return tuple(
        c.id
        for c in result.cells
        if c.question.kind == "principle"
        and (plainly_violated(c) or (material and worst_mass(c) >= MATERIAL_MASS))
    )


def confirmed_violations(
    pooled: Sequence[Cell], evidence: Mapping[str, Evidence]
) -> tuple[str, ...]:
    """Principle questions confirmed at their worst choice: each fails the artifact."""
    found: list[str] = []
    for cell in pooled:
        if cell.question.kind != "principle" or cell.id not in evidence:
            continue
        worst = min(c.score for c in cell.question.choices if c.score is not None)
        held = evidence[cell.id]
        if held.status == "confirmed" and held.ceiling is not None and held.ceiling <= worst:
            found.append(cell.id)
    return tuple(found)


def threshold_suspects(result: ArtifactResult) -> tuple[str, ...]:
    """Cells that pull the score down, in the order re-asking them helps most.

    Answered cells below the best score come first, lowest first, then n/a answers (which
    drop a question from the mean and so may hold the score down too).
    """
    scored = sorted(
        (c for c in result.cells if c.state == "answered" and (c.score or 0.0) < 1.0),
        key=lambda c: (c.score or 0.0, c.id),
    )
    na = [c for c in result.cells if c.state == "na"]
    return tuple(c.id for c in (*scored, *na))


def upper_bound(
    cells: Sequence[Cell],
    evidence: Mapping[str, Evidence],
    assume_confirmed: frozenset[str] = frozenset(),
) -> float | None:
    """The artifact's best possible score given what is confirmed.

    Confirmed cells count at their claim's ceiling (or their pooled score, if higher);
    confirmed n/a cells leave the mean; every other cell (unscored ones included) counts
    at the best score. ``assume_confirmed`` treats further cells as confirmed at their
    current answer, to ask whether testing them could ever settle the verdict.
    """
    total = 0.0
    count = 0
    for cell in cells:
        found = evidence.get(cell.id)
        if found is not None and found.status == "confirmed":
            if found.ceiling is None:
                continue
            total += max(found.ceiling, cell.score if cell.score is not None else 0.0)
        elif cell.id in assume_confirmed:
            if cell.state == "na":
                continue
            total += cell.score if cell.score is not None else 1.0
        else:
            total += 1.0
        count += 1
    return total / count if count else None


def settle(
    result: ArtifactResult, pooled: Sequence[Cell], evidence: Mapping[str, Evidence]
) -> ArtifactResult:
    """The verdict on pooled answers, failing only on confirmed evidence."""
    if result.stopped_by is not None:
        return result  # a deterministic gate is evidence on its own
    verdict = judge_verdict(result.key, pooled, result.threshold, result.gates)
    gate_ids = {c.id for c in pooled if c.question.kind == "gate"}
    gated = any(evidence.get(q) is not None and evidence[q].status == "confirmed" for q in gate_ids)
    raw = verdict.raw_score
    score = raw
    reasons: list[Reason] = []
    notes: list[Note] = list(verdict.notes)
    kept = {kind: [r for r in verdict.reasons if r.kind is kind] for kind in ReasonKind}
    if gated:
        gate_cells = [c for c in pooled if c.id in gate_ids and c.score is not None]
        cap = min(c.score for c in gate_cells if c.score is not None) if gate_cells else 0.0
        score = cap if raw is None else min(raw, cap)
        reasons.extend(kept[ReasonKind.NSCP])
        if not reasons:
            reasons.append(nscp_reason(next(c.question for c in pooled if c.id in gate_ids)))
    elif verdict.gated or any(q in evidence for q in gate_ids):
        notes.append(_unconfirmed_gate(evidence, gate_ids))
    # A refusal fails closed whatever the re-asks say (canon.core.scoring.REFUSAL_NOTE).
    reasons.extend(kept[ReasonKind.REFUSED])
    violated = confirmed_violations(pooled, evidence)
    reasons.extend(violation_reason(c, confirmed=True) for c in pooled if c.id in violated)
    for qid in violation_suspects(result):
        if qid not in violated and plainly_violated(result.cell(qid)):
            found = evidence.get(qid)
            asks = 1 if found is None else found.asks
            text = (
                f"principle {qid} read as plainly violated, but re-asking the judge failed "
                f"({asks} answer(s)): undecided, never a pass"
                if found is not None and found.status == "unavailable"
                else f"principle {qid} read as plainly violated, but not beyond judge noise "
                f"({asks} answer(s)); not counted as a failure"
            )
            notes.append(Note(NoteKind.VIOLATION_UNCONFIRMED, text, question=qid))
    reasons.extend(kept[ReasonKind.UNSCORED])
    bound = upper_bound(pooled, evidence)
    below = False
    if score is None:
        if not verdict.unscored and not verdict.refused:
            reasons.append(NO_QUESTION)
    elif not gated and not violated and score < result.threshold:
        if bound is not None and bound < result.threshold:
            below = True
            reasons.append(
                Reason(
                    ReasonKind.BELOW_THRESHOLD,
                    f"score {score:.3f} is below the threshold {result.threshold:.3f} "
                    f"(confirmed: at best {bound:.3f} on the confirmed answers)",
                    score=score,
                    threshold=result.threshold,
                )
            )
        elif not verdict.unscored:
            notes.append(
                Note(
                    NoteKind.THRESHOLD_UNCONFIRMED,
                    f"score {score:.3f} is below the threshold {result.threshold:.3f}, but not "
                    f"beyond judge noise (it could be {bound:.3f}); not counted as a failure",
                )
            )
        else:
            reasons.append(
                Reason(
                    ReasonKind.PARTIAL_SCORE,
                    f"score {score:.3f} is below the threshold {result.threshold:.3f} on the "
                    f"answered questions only; not evidence while questions are unscored",
                )
            )
    return dataclasses.replace(
        verdict,
        canon=not reasons,
        score=score,
        gated=gated,
        reasons=tuple(reasons),
        notes=tuple(notes),
        below_threshold=below,
        violated=violated,
        digest=result.digest,
    )


def _unconfirmed_gate(evidence: Mapping[str, Evidence], gate_ids: set[str]) -> Note:
    found = [evidence[q] for q in sorted(gate_ids) if q in evidence]
    if any(e.status == "unavailable" for e in found):
        why = "re-asking the judge failed"
    elif any(e.status == "open" for e in found):
        why = "the judge stayed split over the re-asks"
    else:
        why = "the judge did not repeat it when asked again"
    asks = max((e.asks for e in found), default=1)
    if any(e.status == "unavailable" for e in found):
        return Note(
            NoteKind.GATE_UNCONFIRMED,
            f"NSCP gate tripped once, but {why} ({asks} answer(s)): undecided, never a pass",
        )
    return Note(
        NoteKind.GATE_UNCONFIRMED,
        f"NSCP gate tripped once, but not beyond judge noise ({why}; {asks} answer(s)); "
        "not counted as a failure",
    )


def solidly_satisfied(score: float | None, confidence: float | None) -> bool:
    """A confident, clearly satisfied answer."""
    return (
        score is not None
        and confidence is not None
        and score >= SOLID_SATISFIED
        and confidence >= SOLID_CONFIDENCE
    )


def violated(score: float | None) -> bool:
    """A clearly violated answer (the current side of a flip)."""
    return score is not None and score <= SOLID_VIOLATED
