"""Comparing a run with its baseline: failures, flips (Layer 1), mean drift (Layer 2), rates.

The comparison is pure: it takes settled results (``canon.core.settle``) and the evidence
gathered for them, and says what fails the check. Without evidence (``gate()`` called on
plain results) a flip stays *pending* and counts as a regression: fail closed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from canon.core.baseline import SETTLED_FORMAT, ArtifactRecord, Baseline, recorded_question
from canon.core.comparison import (
    CellKey,
    Comparison,
    Drift,
    Flip,
    FlipStatus,
    NonCanon,
    Rate,
    ReaskNoise,
)
from canon.core.drift import layer2, optimistic_raw
from canon.core.evidence import DecisionRule, Evidence, Power
from canon.core.judge_health import inconclusive_reasons
from canon.core.outcome import NO_QUESTION, Note, NoteKind, ReasonKind, below_reason
from canon.core.scoring import ArtifactResult, Cell, fails_on_evidence
from canon.core.settle import (
    SOLID_CONFIDENCE,
    SOLID_SATISFIED,
    SOLID_VIOLATED,
    solidly_satisfied,
    too_noisy,
    unit_flip_rate,
    violated,
)
from canon.core.verdict import first_failure
from canon.errors import UsageError

__all__ = [
    "DEFAULT_TOLERANCE",
    "REACCEPT",
    "SOLID_CONFIDENCE",
    "SOLID_SATISFIED",
    "SOLID_VIOLATED",
    "Comparison",
    "Drift",
    "Flip",
    "NonCanon",
    "Rate",
    "ReaskNoise",
    "gate",
    "provenance_notes",
]

DEFAULT_TOLERANCE = 0.02

REACCEPT = 'run "canon accept" to record this run as the new baseline'


class GateArgumentError(UsageError, ValueError):
    """``gate()`` was called with arguments it cannot check (e.g. no results at all)."""


def gate(
    results: Sequence[ArtifactResult],
    baseline: Baseline,
    threshold: float,
    tolerance: float = DEFAULT_TOLERANCE,
    *,
    evidence: Mapping[CellKey, Evidence] | None = None,
    rule: DecisionRule | None = None,
    noise: ReaskNoise | None = None,
    strict: bool = False,
    constitution: str | None = None,
    inputs: Mapping[str, str] | None = None,
    power: Power | None = None,
) -> Comparison:
    """Compare a run with its baseline.

    ``evidence`` settles each flip from the confirmation re-asks; without it flips stay
    pending (regressions). ``strict`` fails on known failures too. ``constitution`` is the
    run's constitution digest: when it differs from the baseline's, an identical text may
    read differently for a reason other than the judge, so no text counts as unchanged.
    ``inputs`` gives the digest of each run artifact's input (the request it answers): an
    artifact whose input is not the one its record answered has nothing to regress from (a
    note says so, with re-accept advice), never a regression. ``power``: what the run could
    confirm (``canon.check.confirm``); a run that could not have seen a regression is
    inconclusive, pass or fail (``blind_notes``).
    """
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
    rule = rule or DecisionRule()
    present = set(keys)
    missing = tuple(sorted(k for k in baseline.artifacts if k not in present))
    changed: tuple[str, ...] = ()
    if inputs is not None:
        changed = tuple(
            sorted(
                k
                for k in keys
                if k in baseline.artifacts and baseline.artifacts[k].input != inputs.get(k)
            )
        )
        # Compared as if new: another request is another yardstick for the same reply.
        kept = {k: v for k, v in baseline.artifacts.items() if k not in changed}
        baseline = dataclasses.replace(baseline, artifacts=kept)
    records = baseline.artifacts
    new = tuple(sorted(k for k in keys if k not in records and k not in changed))
    notes: list[Note] = []
    if changed:
        notes.append(
            Note(
                NoteKind.INPUT_CHANGED,
                f"{len(changed)} artifact(s) answer another input (request) than the baseline "
                f"recorded, so they were not compared: {', '.join(changed)}; {REACCEPT}",
                keys=changed,
            )
        )
    if baseline.legacy:
        notes.append(
            Note(
                NoteKind.LEGACY_BASELINE,
                f"the baseline is format {baseline.format} (overall scores only), so the "
                f"per-question check (Layer 1) was skipped; {REACCEPT} with per-question scores",
            )
        )
    if new:
        notes.append(
            Note(
                NoteKind.NEW_ARTIFACTS,
                f"{len(new)} new artifact(s) with nothing to regress from: {', '.join(new)}",
                keys=new,
            )
        )
    if missing:
        notes.append(
            Note(
                NoteKind.MISSING_ARTIFACTS,
                f"{len(missing)} recorded artifact(s) not in this run: {', '.join(missing)}",
                keys=missing,
            )
        )
    yardstick = constitution is None or baseline.constitution in (None, constitution)
    unchanged = frozenset(r.key for r in results if yardstick and same_text(r, records.get(r.key)))
    flips, layer1_notes = _layer1(results, baseline, evidence, unchanged)
    notes.extend(layer1_notes)
    drift = layer2(results, baseline, tolerance, rule.drift_alpha, unchanged)
    if drift.test.method == "none":
        notes.append(
            Note(NoteKind.DRIFT_NOT_TESTED, f"mean drift (Layer 2) not tested: {drift.test.detail}")
        )
    non_canon = tuple(
        _non_canon(r, threshold, records.get(r.key), r.key in unchanged)
        for r in results
        if _fails(r, threshold)
    )
    notes.extend(
        Note(
            NoteKind.JUDGE_DISAGREEMENT,
            f"{n.key} now reads as non-canon, but its text is identical to the baseline's: "
            "judge disagreement on an unchanged text, not a regression (--strict fails on it)",
            key=n.key,
        )
        for n in non_canon
        if n.unchanged and not n.known
    )
    if noise is not None and noise.noisier_than_assumed:
        low = noise.rate.interval[0]
        notes.append(
            Note(
                NoteKind.NOISY_JUDGE,
                f"the judge disagreed with itself on {noise.rate} of the re-asks, more than the "
                f"flip rate the check assumes ({noise.assumed_flip_rate:.0%}; at least "
                f'{low:.0%} here): run "canon calibrate" and raise flip_rate in canon.yaml',
            )
        )
    undecided = tuple(
        r.key for r in results if not r.canon and r.unscored and not _fails(r, threshold)
    )
    # A deterministic gate's failure is a fact, whatever the judge's noise: it stays red.
    stopped = {r.key for r in results if r.stopped_by is not None}
    factual = any(n.key in stopped and (strict or not n.known) for n in non_canon)
    regressed = {n.key for n in non_canon if not (n.known or n.unchanged)}
    regressed.update(f.key for f in flips if f.regression)
    inconclusive: tuple[str, ...] = (
        ()
        if factual
        else (
            # an unchanged text cannot regress on the judge's say-so, so being unable to
            # confirm a failure of it costs the check nothing
            *blind_notes(_about_changed(power, unchanged), rule),
            *inconclusive_reasons(
                noise,
                results,
                baseline,
                regressed=regressed,
                unchanged=unchanged,
                alpha=rule.alpha,
            ),
        )
    )
    return Comparison(
        checked=len(results),
        matched=len(keys) - len(new),
        new=new,
        missing=missing,
        non_canon=non_canon,
        flips=flips,
        drift=drift,
        notes=tuple(notes),
        unscored=sum(len(r.unscored) for r in results),
        canon_rate=_canon_rates([r for r in results if r.key not in undecided], baseline),
        question_rates=_question_rates(results, baseline),
        noise=noise,
        strict=strict,
        undecided=undecided,
        cause=first_failure(results),
        inconclusive=inconclusive,
    )


FIXES = (
    "give each artifact several responses (replicates), add a confirm_judge that samples, "
    'or run "canon calibrate" to measure the judge'
)
# A sampling judge split on a cell: its spread on every first ask (its log-probabilities, or
# several sampled answers a request) shows the split where one answer cannot (a coin on one
# reply then never passes: docs/baselines.md).
SAMPLES_FIX = (
    "judge_options samples: 5 (a judge read from labels asks 3 answers an ask by default, and "
    "one whose model gives logprobs is read from them)"
)


def _about_changed(power: Power | None, unchanged: frozenset[str]) -> Power | None:
    """``power`` with its unconfirmable artifacts narrowed to those that could regress."""
    if power is None or not power.unconfirmable:
        return power
    kept = tuple(k for k in power.unconfirmable if k not in unchanged)
    return dataclasses.replace(power, unconfirmable=kept)


# A failing verdict the first pass read but confirmation did not bear out.
SUSPECTED = frozenset(
    {NoteKind.GATE_UNCONFIRMED, NoteKind.VIOLATION_UNCONFIRMED, NoteKind.THRESHOLD_UNCONFIRMED}
)


def scored_blind_notes(
    results: Sequence[ArtifactResult], power: Power, rule: DecisionRule
) -> tuple[Note, ...]:
    """Why a scored run (no baseline to compare with) cannot call an artifact canon: a
    failure the judge read in it was never confirmed because it could not have been (every
    look the run may take falls short of the bar: a deterministic judge alone), or because
    the judge stayed split on it; or the judge misread responses beyond the flip rate. Each
    note says what would fix it, as a check's do (``blind_notes``)."""
    suspected = frozenset(
        r.key
        for r in results
        if not fails_on_evidence(r) and any(n.kind in SUSPECTED for n in r.notes)
    )
    narrowed = dataclasses.replace(
        power,
        unconfirmable=tuple(k for k in power.unconfirmable if k in suspected),
        split=tuple(cell for cell in power.split if cell[0] in suspected),
    )
    return blind_notes(narrowed, rule)


def blind_notes(power: Power | None, rule: DecisionRule) -> tuple[Note, ...]:
    """Why the run could not have seen a regression, each with what would fix it: no
    failure could reach the evidence the rule needs, the judge stayed split on a cell a
    verdict hung on, or it misread responses beyond the flip rate the rule assumes."""
    if power is None:
        return ()
    notes: list[Note] = []
    if power.unconfirmable:
        keys = power.unconfirmable
        shown = ", ".join(keys[:5]) + (" …" if len(keys) > 5 else "")
        why = (
            "a deterministic judge answers an identical request identically, so asking it "
            "again is no evidence"
            if power.deterministic
            else "the judge's looks are too few"
        )
        notes.append(
            Note(
                NoteKind.UNCONFIRMABLE,
                f"no failure of {len(keys)} artifact(s) ({shown}) could have been confirmed: "
                f"{why}, and every look this run may take reaches an e-value of at most "
                f"{power.best or 0:.0f} where {power.bar or 0:.0f} is needed; {FIXES}",
                keys=keys,
                best=power.best,
                bar=power.bar,
            )
        )
    if power.split:
        cells = [f"{key} {qid}" for key, qid in power.split]
        notes.append(
            Note(
                NoteKind.JUDGE_SPLIT,
                f"the judge stayed split over its re-asks on {len(cells)} cell(s) a verdict "
                f"hung on ({', '.join(cells[:5])}{' …' if len(cells) > 5 else ''}): about "
                f"as often one answer as the other, or with its own probabilities between "
                f"the two, far above the flip rate of {rule.flip_rate:.0%} the check assumes; "
                + (FIXES if power.deterministic else f"set {SAMPLES_FIX}, {FIXES}"),
                cells=power.split,
            )
        )
    if too_noisy(power.strays, power.readings, rule.flip_rate):
        rate = unit_flip_rate(power.strays, power.readings, rule.flip_rate)
        notes.append(
            Note(
                NoteKind.RESPONSES_MISREAD,
                f"the judge read {power.strays} of {power.readings} response(s) as violated "
                f"where the artifact's other responses were not (up to {rate:.0%}), beyond "
                f"the flip rate of {rule.flip_rate:.0%} the check assumes; {FIXES}",
                strays=power.strays,
                readings=power.readings,
            )
        )
    return tuple(notes)


def _fails(result: ArtifactResult, threshold: float) -> bool:
    """Non-canon on evidence, judged against the check's threshold when nothing settled it."""
    if result.below_threshold is not None or result.score is None:
        return fails_on_evidence(result)
    if result.stopped_by is not None or result.gated or result.refused or result.violated:
        return True  # a refused question fails closed (canon.core.scoring.REFUSAL_NOTE)
    # Unsettled results: unscored questions count at their best, so an outage is no evidence.
    best = optimistic_raw(result) if result.unscored else result.score
    return best is not None and best < threshold


def same_text(result: ArtifactResult, record: ArtifactRecord | None) -> bool:
    """Whether the artifact's text is the one the baseline recorded (format 4 digests)."""
    return (
        record is not None
        and record.digest is not None
        and result.digest is not None
        and result.digest == record.digest
    )


def _non_canon(
    result: ArtifactResult, threshold: float, record: ArtifactRecord | None, same: bool = False
) -> NonCanon:
    reasons = [r for r in result.reasons if r.kind.is_evidence]
    said = any(r.kind is ReasonKind.BELOW_THRESHOLD for r in reasons)
    score = result.score
    if score is not None and score < threshold and result.below_threshold is None and not said:
        reasons.append(below_reason(score, threshold))
    if not reasons:
        reasons.append(NO_QUESTION)
    known = record is not None and record.canon is False
    # A deterministic gate is a fact about the text and its files, not the judge's say-so;
    # a refusal is no reading at all, and fails closed on any text.
    judge_only = same and result.stopped_by is None and not result.refused
    return NonCanon(result.key, tuple(reasons), known, judge_only)


def _layer1(
    results: Sequence[ArtifactResult],
    baseline: Baseline,
    evidence: Mapping[CellKey, Evidence] | None,
    unchanged: frozenset[str] = frozenset(),
) -> tuple[tuple[Flip, ...], list[Note]]:
    flips: list[Flip] = []
    settled = baseline.format >= SETTLED_FORMAT
    changed: dict[str, tuple[str | None, str | None, list[str]]] = {}
    for result in results:
        record = baseline.artifacts.get(result.key)
        if record is None or record.questions is None:
            continue
        for cell in result.cells:
            before = recorded_question(record, cell.question)
            if before is None:
                continue
            if before.subject != cell.question.subject:
                # Without principle ids, P1 may now ask about another principle.
                changed.setdefault(cell.id, (before.subject, cell.question.subject, []))[2].append(
                    result.key
                )
                continue
            if before.state != "answered" or not solidly_satisfied(before.score, before.confidence):
                continue
            found = None if evidence is None else evidence.get((result.key, cell.id))
            if found is None and not (cell.state == "answered" and violated(cell.score)):
                continue
            if found is not None and found.ceiling is not None and found.ceiling > SOLID_VIOLATED:
                continue  # a low answer tested for the threshold, not a flip
            flip = _flip(result.key, cell, before.score, before.confidence, found)
            if flip.regression and result.key in unchanged:
                flip = dataclasses.replace(flip, status="unchanged")
            elif flip.regression and settled and (before.asks or 0) < 2:
                # Symmetric evidence: the baseline side of a flip must be more than one draw.
                flip = dataclasses.replace(flip, status="unsettled")
            flips.append(flip)
    notes = [
        Note(
            NoteKind.PRINCIPLE_CHANGED,
            f"question {qid} asks about a different principle than in the baseline "
            f"(was {old!r}, now {now!r}); skipped for {len(keys)} artifact(s); {REACCEPT}",
            question=qid,
        )
        for qid, (old, now, keys) in sorted(changed.items())
    ]
    for flip in flips:
        said = _FLIP_NOTES.get(flip.status)
        if said is not None:
            kind, text = said
            notes.append(
                Note(
                    kind,
                    f"{flip.key} {flip.question} " + text.format(reasks=flip.asks - 1),
                    key=flip.key,
                    question=flip.question,
                )
            )
    if not settled and any(f.regression for f in flips):
        notes.append(
            Note(
                NoteKind.SINGLE_ASK_BASELINE,
                f"the baseline is format {baseline.format}: each of its answers was asked once, "
                f"so a flip may be the baseline's own noise; {REACCEPT} (format "
                f"{SETTLED_FORMAT} asks every answer twice)",
            )
        )
    return tuple(flips), notes


# What each settled-but-not-failing flip status says, after "KEY QUESTION ".
_FLIP_NOTES: dict[str, tuple[NoteKind, str]] = {
    "unconfirmed": (
        NoteKind.FLIP_UNCONFIRMED,
        "read as violated once, but the judge did not repeat it over {reasks} re-ask(s); "
        "treated as judge noise",
    ),
    "inconclusive": (
        NoteKind.FLIP_INCONCLUSIVE,
        "read as violated, but the judge stayed split over {reasks} re-ask(s); not counted "
        'as a regression (run "canon calibrate" to measure this judge\'s noise)',
    ),
    "unavailable": (
        NoteKind.FLIP_UNAVAILABLE,
        "read as violated, but re-asking the judge failed; the flip is undecided",
    ),
    "unchanged": (
        NoteKind.FLIP_UNCHANGED,
        "now reads as violated, but the text is identical to the baseline's: judge "
        "disagreement on an unchanged text, not a regression",
    ),
    "unsettled": (
        NoteKind.FLIP_UNSETTLED,
        "now reads as violated, but its baseline answer rests on a single ask; not a "
        f"regression ({REACCEPT})",
    ),
}


def _flip(
    key: str,
    cell: Cell,
    baseline_score: float | None,
    baseline_confidence: float | None,
    found: Evidence | None,
) -> Flip:
    status: FlipStatus = "pending"
    if found is not None:
        status = {
            "confirmed": "confirmed",
            "refuted": "unconfirmed",
            "open": "inconclusive",
            "unavailable": "unavailable",
        }[found.status]  # type: ignore[assignment]
    return Flip(
        key=key,
        question=cell.id,
        text=cell.question.subject or cell.question.text,
        baseline_score=float(baseline_score or 0.0),
        baseline_confidence=float(baseline_confidence or 0.0),
        score=float(cell.score if cell.score is not None else 0.0),
        confidence=float(cell.confidence if cell.confidence is not None else 0.0),
        status=status,
        asks=1 if found is None else found.asks,
        e_value=None if found is None else found.e_value,
        principle=cell.question.principle,
    )


def _canon_rates(results: Sequence[ArtifactResult], baseline: Baseline) -> tuple[Rate, Rate]:
    """Canon shares, baseline -> now; ``results`` leaves out the artifacts not judged."""
    recorded = [r.canon for r in baseline.artifacts.values() if r.canon is not None]
    return (
        Rate(sum(recorded), len(recorded)),
        Rate(sum(r.canon for r in results), len(results)),
    )


def _question_rates(
    results: Sequence[ArtifactResult], baseline: Baseline
) -> dict[str, tuple[Rate, Rate]]:
    """Satisfied shares per question, baseline -> now, matched as flips are (by principle id)."""
    questions = {cell.id: cell.question for result in results for cell in result.cells}
    then: dict[str, list[int]] = {}
    matched: set[int] = set()  # the baseline rows some current question compares with
    for record in baseline.artifacts.values():
        for qid, question in questions.items():
            row = recorded_question(record, question)
            if row is None:
                continue
            matched.add(id(row))
            _tally(then, qid, row.state, row.score)
        for qid, row in (record.questions or {}).items():
            # a question of the baseline that no current question compares with (a removed
            # principle) keeps its own rate, under its principle id when it had one
            if id(row) not in matched and (row.principle or qid) not in questions:
                _tally(then, row.principle or qid, row.state, row.score)
    now: dict[str, list[int]] = {}
    for result in results:
        for cell in result.cells:
            _tally(now, cell.id, cell.state, cell.score)
    order = list(dict.fromkeys([*now, *then]))
    return {qid: (Rate(*then.get(qid, [0, 0])), Rate(*now.get(qid, [0, 0]))) for qid in order}


def _tally(tallies: dict[str, list[int]], qid: str, state: str, score: float | None) -> None:
    if state == "answered" and score is not None:
        tally = tallies.setdefault(qid, [0, 0])
        tally[0] += score >= SOLID_SATISFIED
        tally[1] += 1


def provenance_notes(baseline: Baseline, *, judge: str, constitution: str) -> tuple[Note, ...]:
    """Notes when the judge or constitution differs from the one the baseline recorded."""
    notes: list[Note] = []
    if baseline.judge is not None and baseline.judge != judge:
        notes.append(
            Note(
                NoteKind.JUDGE_CHANGED,
                f"the baseline was recorded with judge {baseline.judge!r}; this run used "
                f"{judge!r}, so differences may come from the judge",
            )
        )
    if baseline.constitution is not None and baseline.constitution != constitution:
        notes.append(
            Note(
                NoteKind.CONSTITUTION_CHANGED,
                "the constitution changed since the baseline was recorded; if that was "
                f"intended, {REACCEPT}",
            )
        )
    return tuple(notes)
