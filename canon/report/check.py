"""The check report, as text for people and as plain data for ``--format json``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from canon.core.artifact import Artifact
from canon.core.baseline import Baseline
from canon.core.compare import REACCEPT, Comparison, Drift, Flip, Rate
from canon.core.outcome import ReasonKind, grouped
from canon.core.scoring import (
    ArtifactResult,
    Cell,
    cell_label,
    cell_reason,
    reason_excerpt,
    shortfalls,
)
from canon.errors import ExitCode
from canon.report.json_report import result_record, with_material
from canon.report.text import printable, shorten

_FLIP_VERDICTS = {
    "pending": "REGRESSION (not re-asked)",
    "confirmed": "REGRESSION (confirmed beyond judge noise)",
    "unconfirmed": "judge noise (not repeated on re-ask)",
    "inconclusive": "undecided (the judge stayed split)",
    "unavailable": "undecided (re-ask failed)",
    "unchanged": "judge disagreement (the text is identical to the baseline's)",
    "unsettled": "not a regression (the baseline answer was a single ask)",
}

DRIFT_UNTESTED = "not tested (no matched artifact was scored in both runs)"
ALIGNMENT_HEADING = "the judge on the questions that failed (agreement with human labels)"


_EXIT_CODES = {
    "conforms": ExitCode.OK,
    "regressed": ExitCode.FAILED,
    "unavailable": ExitCode.JUDGE_UNAVAILABLE,
    "inconclusive": ExitCode.INCONCLUSIVE,
}


def exit_code_for(comparison: Comparison) -> ExitCode:
    """OK conforms, FAILED regressed, JUDGE_UNAVAILABLE the judge left something undecided,
    INCONCLUSIVE the judge is too noisy to tell."""
    return _EXIT_CODES[comparison.status]


def remedy(comparison: Comparison, baseline: Baseline, reaccept: str = REACCEPT) -> str:
    """The last line of a check report: the verdict and what to do next (``reaccept``: how
    the door that checked records a new baseline)."""
    if comparison.status == "regressed" and _only_refusals(comparison):
        keys = ", ".join(n.key for n in comparison.failures)
        return (
            f"JUDGE REFUSED: the judge refused to judge {keys}; that fails the check (it "
            "cannot be canon) but is not a regression of the agent: have a person or "
            "another judge decide it"
        )
    if comparison.status == "regressed":
        return f"REGRESSION: fix what regressed; if the change is intended, {reaccept}"
    if comparison.status == "inconclusive":
        return (
            "INCONCLUSIVE: this run cannot tell a regression from the judge's own mistakes "
            f'({"; ".join(comparison.inconclusive)}); run "canon calibrate", add replicates '
            "or a confirm_judge, or use a steadier judge"
        )
    if comparison.status == "unavailable":
        return (
            "INCOMPLETE: the judge left questions a decision needs unanswered and no "
            'regression was found; run "canon check" again when the judge is reachable'
        )
    stale = comparison.new or comparison.missing or baseline.legacy
    if stale or any(note.kind.advises_reaccept for note in comparison.notes):
        return f"CONFORMS to the baseline; to fold the notes above into it, {reaccept}"
    return "CONFORMS to the baseline"


def _only_refusals(comparison: Comparison) -> bool:
    """Whether the check fails only because the judge refused to judge some artifacts."""
    failures = comparison.failures
    return (
        bool(failures)
        and all(any(r.kind is ReasonKind.REFUSED for r in n.reasons) for n in failures)
        and not comparison.regressions
        and not comparison.drift.regressed
    )


def incomplete_lines(comparison: Comparison) -> list[str]:
    """The artifacts the judge left unjudged (out of the rates) and the first failure's cause."""
    c = comparison
    lines = []
    if c.undecided:
        lines.append(
            f"  {len(c.undecided)} incomplete (not judged, left out of the rates): "
            + ", ".join(c.undecided)
        )
    if c.cause is not None:
        lines.append(f"  judge unavailable: {c.unscored} question(s) unscored; first: {c.cause}")
    return lines


def failing_cells(result: ArtifactResult, count: int = 3) -> list[Cell]:
    """The cells to show under a non-canon artifact: the ones its reasons name (a violated
    principle, the NSCP gate) first, then the lowest-scoring; never the unscored ones,
    whose failure is said once for the run."""
    named = {r.data.get("question") for r in result.reasons}
    first = [c for c in result.cells if c.id in named]
    rest = [c for c in shortfalls(result) if c not in first and c.state != "unscored"]
    return (first + rest)[:count]


def _reason_lines(result: ArtifactResult | None, indent: str = "    ") -> list[str]:
    if result is None:
        return []
    lines = []
    for cell in failing_cells(result):
        reason = reason_excerpt(cell)
        if reason is not None:
            lines.append(f"{indent}{cell.id}: {reason}")
    return lines


def counted(lines: Sequence[str]) -> list[str]:
    """Repeated lines said once, with ``(xN)`` when they occurred N > 1 times."""
    return [line if n == 1 else f"{line} (x{n})" for line, n in grouped(list(lines))]


def question_subjects(results: Sequence[ArtifactResult]) -> dict[str, str]:
    """Each question id's text as reports show it beside the id (a principle's own text)."""
    return {c.id: cell_label(c) for r in results for c in r.cells}


def _flip_cell(results: Mapping[str, ArtifactResult], key: str, qid: str) -> Cell | None:
    result = results.get(key)
    if result is None:
        return None
    try:
        return result.cell(qid)
    except KeyError:
        return None


def _flip_reason(cell: Cell | None) -> str | None:
    return None if cell is None else cell_reason(cell)


def render_check(
    comparison: Comparison,
    baseline: Baseline,
    *,
    suite: str,
    path: str,
    results: Sequence[ArtifactResult] = (),
    usage_line: str | None = None,
    reaccept: str = REACCEPT,
) -> str:
    """The human-readable check report, with the judge's reasons; it ends with the remedy
    (``reaccept``: how the door that checked records a new baseline)."""
    c = comparison
    by_key = {r.key: r for r in results}
    before, now = c.canon_rate
    lines = [
        f"canon check: suite '{suite}' against {path}",
        f"  {c.checked} artifact(s) checked: {c.matched} matched, {len(c.new)} new, "
        f"{len(c.missing)} recorded but missing",
        f"  canon artifacts: {before} -> {now} (95% Wilson intervals)",
    ]
    lines.extend(incomplete_lines(c))
    failures = c.failures
    if failures:
        lines.append(
            "non-canon artifacts (not told apart from judge noise: the check is inconclusive):"
            if c.inconclusive
            else "non-canon artifacts (confirmed beyond judge noise):"
        )
        for n in failures:
            lines.append(f"  {n.key}: {'; '.join(n.reasons)}")
            lines.extend(_reason_lines(by_key.get(n.key)))
    known = [n for n in c.known if n not in failures]
    if known:
        lines.append("known failures (non-canon in the baseline too; --strict fails on them):")
        lines.extend(f"  {n.key}: {'; '.join(n.reasons)}" for n in known)
    disagreements = [n for n in c.judge_disagreements if n not in failures]
    if disagreements:
        lines.append(
            "judge disagreements (canon in the baseline, identical text; --strict fails on them):"
        )
        lines.extend(f"  {n.key}: {'; '.join(n.reasons)}" for n in disagreements)
    if c.flips:
        lines.append("per-question flips from solidly satisfied to violated (Layer 1):")
        for f in c.flips:
            lines.append(
                f"  {f.key} {f.label}: {f.baseline_score:.2f} -> {f.score:.2f} over "
                f"{f.asks} answer(s) - {_flip_verdict(f, c)}: {f.text}"
            )
            cell = _flip_cell(by_key, f.key, f.question)
            reason = None if cell is None else reason_excerpt(cell)
            if reason is not None and f.regression:
                lines.append(f"    judge: {reason}")
            if f.confirmed_by and f.regression:
                lines.append(
                    f"    confirmed by {len(f.confirmed_by)} varied re-ask(s): "
                    + "; ".join(f.confirmed_by)
                )
    lines.extend(_drift_lines(c.drift, inconclusive=bool(c.inconclusive)))
    dropped = _dropped_questions(c)
    if dropped:
        lines.append("questions satisfied by fewer artifacts than in the baseline:")
        subjects = question_subjects(results)
        lines.extend(
            f"  {qid} ({shorten(subjects[qid], 80)}): {then} -> {now}"
            if qid in subjects
            else f"  {qid}: {then} -> {now}"
            for qid, then, now in dropped
        )
    if c.noise is not None and c.noise.reasks:
        lines.append(
            f"judge noise seen on re-asks: {c.noise.rate} disagreed with their question's "
            f"majority answer (the check assumes at most {c.noise.assumed_flip_rate:.0%})"
        )
    if c.notes:
        lines.append("notes:")
        lines.extend(f"  - {note}" for note in counted(c.notes))
    if c.alignment:
        lines.append(f"{ALIGNMENT_HEADING}:")
        lines.extend(f"  - {line}" for line in counted(c.alignment))
    if usage_line is not None:
        lines.append(usage_line)
    lines.append(remedy(c, baseline, reaccept))
    return "\n".join(map(printable, lines)) + "\n"


def _dropped_questions(c: Comparison) -> list[tuple[str, Rate, Rate]]:
    rows = []
    for qid, (then, now) in c.question_rates.items():
        if then.trials and now.trials and (now.value or 0.0) < (then.value or 0.0):
            rows.append((qid, then, now))
    return rows


def _flip_verdict(flip: Flip, comparison: Comparison) -> str:
    if comparison.inconclusive and flip.regression:
        return "suspected (the judge repeated it, but it is too noisy to call a regression)"
    return _FLIP_VERDICTS[flip.status]


def drift_verdict(drift: Drift, *, inconclusive: bool = False) -> str:
    """What Layer 2 found, in words every report uses: a test that did not run is
    "not tested", never "no regression"."""
    if drift.drop is None or drift.baseline_mean is None or drift.current_mean is None:
        return DRIFT_UNTESTED
    if drift.test.method == "none":
        return f"not tested ({drift.test.detail})"
    if drift.regressed and inconclusive:
        return "beyond the tolerance, but the judge is too noisy to call it a regression"
    if drift.regressed:
        return "REGRESSION: beyond the tolerance and beyond noise"
    if drift.drop > drift.tolerance:
        return "beyond the tolerance but within noise"
    return "within the tolerance"


def _drift_lines(drift: Drift, *, inconclusive: bool = False) -> list[str]:
    test = drift.test
    if drift.drop is None or drift.baseline_mean is None or drift.current_mean is None:
        return [f"mean drift (Layer 2): {DRIFT_UNTESTED}"]
    head = (
        f"mean drift (Layer 2, uncapped scores): {drift.baseline_mean:.3f} -> "
        f"{drift.current_mean:.3f} (drop {drift.drop:.3f}, tolerance {drift.tolerance:.3f})"
    )
    if test.method == "none":
        return [f"{head}: {drift_verdict(drift)}"]
    lines = [f"{head}: {drift_verdict(drift, inconclusive=inconclusive)}"]
    p_value = "" if test.p_value is None else f", one-sided p = {test.p_value:.3g}"
    interval = ""
    if test.interval is not None:
        interval = f"; 95% interval for the drop [{test.interval[0]:.3f}, {test.interval[1]:.3f}]"
    lines.append(f"  {test.detail}{p_value}{interval}")
    if test.minimum_detectable is not None:
        lines.append(
            f"  a drop of {test.minimum_detectable:.3f} would be caught 80% of the time"
            + (
                f": UNDERPOWERED for the tolerance {drift.tolerance:.3f} (add artifacts, "
                "ask more samples or use logprobs, or raise the tolerance)"
                if drift.underpowered
                else ""
            )
        )
    elif not test.can_reject:
        lines.append(
            "  UNDERPOWERED: too few matched artifacts for this test to show any drop "
            "(add artifacts)"
        )
    return lines


def _rate(rate: Rate) -> dict[str, Any]:
    low, high = rate.interval
    return {
        "successes": rate.successes,
        "trials": rate.trials,
        "rate": rate.value,
        "wilson_95": [low, high],
    }


def _shortfall_data(result: ArtifactResult | None) -> list[dict[str, Any]]:
    if result is None:
        return []
    return [
        {
            "question": cell.id,
            "state": cell.state,
            "score": cell.score,
            "reason": cell.error if cell.state in ("unscored", "refused") else cell_reason(cell),
        }
        for cell in shortfalls(result)
    ]


def check_document(
    comparison: Comparison,
    baseline: Baseline,
    *,
    suite: str,
    path: str,
    results: Sequence[ArtifactResult] = (),
    artifacts: Sequence[Artifact] = (),
) -> dict[str, Any]:
    """The check report as plain data, for ``--format json``, with the judge's reasons and
    each artifact's result (with its input and context, when ``artifacts`` give them)."""
    c, drift = comparison, comparison.drift
    by_key = {r.key: r for r in results}
    given = {a.key: a for a in artifacts}
    before, now = c.canon_rate
    return {
        "suite": suite,
        "baseline": path,
        "status": c.status,
        "exit_code": exit_code_for(c),
        "strict": c.strict,
        "artifacts": {
            "checked": c.checked,
            "matched": c.matched,
            "new": list(c.new),
            "missing": list(c.missing),
        },
        "canon_rate": {"baseline": _rate(before), "now": _rate(now)},
        "question_rates": {
            qid: {"baseline": _rate(then), "now": _rate(current)}
            for qid, (then, current) in c.question_rates.items()
        },
        "non_canon": [
            {
                "key": n.key,
                "reasons": list(n.reasons),
                "reason_codes": [r.code for r in n.reasons],
                "known": n.known,
                "unchanged_text": n.unchanged,
                "shortfalls": _shortfall_data(by_key.get(n.key)),
            }
            for n in c.non_canon
        ],
        "flips": [
            {
                **dataclasses.asdict(f),
                "reason": _flip_reason(_flip_cell(by_key, f.key, f.question)),
            }
            for f in c.flips
        ],
        "drift": {
            "baseline_mean": drift.baseline_mean,
            "current_mean": drift.current_mean,
            "drop": drift.drop,
            "drop_interval_95": None if drift.test.interval is None else list(drift.test.interval),
            "tolerance": drift.tolerance,
            "test": drift.test.method,
            "n": drift.test.n,
            "p_value": drift.test.p_value,
            "minimum_detectable_drop": drift.test.minimum_detectable,
            "smallest_flaggable_drop": drift.smallest_flaggable,
            "underpowered": drift.underpowered,
            "regressed": drift.regressed,
        },
        "judge_noise": None
        if c.noise is None
        else {
            "reasks": c.noise.reasks,
            "disagreements": c.noise.disagreements,
            "rate": _rate(c.noise.rate),
            "assumed_flip_rate": c.noise.assumed_flip_rate,
        },
        "notes": list(c.notes),  # every note, repeats included (the text report counts them)
        "note_codes": [n.code for n in c.notes],
        "unscored_questions": c.unscored,
        "incomplete": list(c.undecided),
        "cause": c.cause,
        "results": [with_material(result_record(r), given.get(r.key)) for r in results],
        "inconclusive": list(c.inconclusive),
        "remedy": remedy(c, baseline),
    }
