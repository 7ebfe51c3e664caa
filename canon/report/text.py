"""Plain-text rendering of scoring results, for terminals and CI logs."""

from __future__ import annotations

from collections.abc import Sequence

from canon.core.scoring import ArtifactResult
from canon.spend import run_usage


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
    lines.append(run_usage(results).line())
    return "\n".join(lines) + "\n"


def _short(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
