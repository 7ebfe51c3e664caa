"""Plain-text rendering of scoring results, for terminals and CI logs."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from canon.check.spend import run_usage
from canon.core.artifact import Artifact, input_text
from canon.core.outcome import NoteKind
from canon.core.scoring import (
    ArtifactResult,
    cell_label,
    reason_excerpt,
    shortfalls,
    shown_score,
)
from canon.core.verdict import judge_failures, tally, verdict_of

LABEL_WIDTH = 100

# Control characters and bidirectional overrides: an artifact id or a reason holding them
# could rewrite the terminal (ANSI escapes) or disguise what is printed.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with every control character shown as an escape such as ``\\x1b``."""
    return _UNPRINTABLE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def render_results(results: Sequence[ArtifactResult], artifacts: Sequence[Artifact] = ()) -> str:
    """One block per artifact (the input it answers, when it has one, and the judge's reason
    for every question that fell short), one line for the gates that had nothing to check,
    then a summary line."""
    lines: list[str] = []
    skipped: Counter[tuple[str, str]] = Counter()
    given = {a.key: a for a in artifacts}
    for result in results:
        score = "  -  " if result.score is None else f"{result.score:.3f}"
        lines.append(f"{verdict_of(result).label:<9} {score}  {result.key}")
        line = input_line(given.get(result.key))
        if line is not None:
            lines.append(f"    {line}")
        lines.extend(f"    - {reason}" for reason in result.reasons)
        # A gate with nothing to check is counted, not repeated: 100 artifacts without a
        # trace would otherwise print 100 identical notes.
        quiet = [g for g in result.gates if g.status == "skip"]
        skipped.update((g.gate, "; ".join(g.reasons) or "nothing to check") for g in quiet)
        lines.extend(
            f"    note: {note}" for note in result.notes if note.kind is not NoteKind.GATE_SKIPPED
        )
        for cell in shortfalls(result):
            if cell.state == "unscored":
                continue  # the reason names them; why the judge failed is said once below
            shown = shown_score(cell)
            shown_id = (
                f"{cell.id} [{cell.question.principle}]" if cell.question.principle else cell.id
            )
            lines.append(f"    {shown_id} {shown}: {shorten(cell_label(cell))}")
            reason = reason_excerpt(cell)
            if reason is not None:
                lines.append(f"        judge: {reason}")
    if skipped:
        lines.append(skip_summary(skipped, len(results)))
    lines.extend(failure_lines(results))
    unscored = sum(len(r.unscored) for r in results)
    refused = sum(len(r.refused) for r in results)
    summary = tally(results)
    if refused:
        summary += f", {refused} question(s) the judge refused"
    if unscored:
        summary += f", {unscored} unscored question(s)"
    lines.append(summary)
    lines.append(run_usage(results).line())
    return "\n".join(map(printable, lines)) + "\n"


def failure_lines(results: Sequence[ArtifactResult], indent: str = "") -> list[str]:
    """Why the judge failed: each distinct error once, with how many questions it hit."""
    return [
        f"{indent}judge failed on {count} question(s): {shorten(error, 300)}"
        for error, count in judge_failures(results)
    ]


def skip_summary(skipped: Counter[tuple[str, str]], total: int) -> str:
    """One line saying how many artifacts each gate skipped, and why."""
    parts = [
        f"{gate} gate skipped for {count} of {total} artifact(s) ({why})"
        for (gate, why), count in sorted(skipped.items())
    ]
    return "note: " + "; ".join(parts)


def input_line(artifact: Artifact | None) -> str | None:
    """The request an artifact answers, on one line (``input: ...``), for every report that
    shows the artifact; None when it answers none."""
    if artifact is None or artifact.input is None:
        return None
    return f"input: {shorten(input_text(artifact.input))}"


def shorten(text: str, width: int = LABEL_WIDTH) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def render_scored_inconclusive(blind: Sequence[str]) -> str:
    """Why a scored run is inconclusive (exit 6), or nothing when it is not."""
    if not blind:
        return ""
    lines = [
        "INCONCLUSIVE: this run cannot tell whether every artifact is canon "
        "(exit code 6; not a pass):"
    ]
    lines += [f"  - {note}" for note in blind]
    return "\n".join(lines) + "\n"
