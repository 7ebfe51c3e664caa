"""Plain-text rendering of scoring results, for terminals and CI logs."""

from __future__ import annotations

import re
from collections.abc import Sequence

from canon.core.scoring import ArtifactResult

# Control characters and bidirectional overrides: an artifact id or a reason holding them
# could rewrite the terminal (ANSI escapes) or disguise what is printed.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with every control character shown as an escape such as ``\\x1b``."""
    return _UNPRINTABLE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def render_results(results: Sequence[ArtifactResult]) -> str:
    """One block per artifact, then a summary line."""
    lines: list[str] = []
    for result in results:
        score = "  -  " if result.score is None else f"{result.score:.3f}"
        verdict = "canon    " if result.canon else "NON-CANON"
        lines.append(f"{verdict} {score}  {result.key}")
        lines.extend(f"    - {reason}" for reason in result.reasons)
        lines.extend(f"    note: {note}" for note in result.notes)
        if not result.canon:
            for cell in result.lowest(3):
                lines.append(f"    low {cell.id} {cell.score:.2f}: {_short(cell.question.text)}")
    failed = sum(not r.canon for r in results)
    unscored = sum(len(r.unscored) for r in results)
    summary = f"{len(results) - failed} canon, {failed} non-canon"
    if unscored:
        summary += f", {unscored} unscored question(s)"
    lines.append(summary)
    return "\n".join(map(printable, lines)) + "\n"


def _short(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
