"""An artifact's verdict in one word: canon, NON-CANON, or INCOMPLETE (not judged).

INCOMPLETE is an artifact the judge left questions of unanswered with no evidence against
it: never a pass, never non-canon (CI may retry, exit 3). Every format (text, JSON, JUnit,
HTML, GitHub) takes the word and the counts from here, and says the judge's failures once
each with how many times they occurred.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from canon.core.outcome import grouped
from canon.core.scoring import ArtifactResult, fails_on_evidence


class Verdict(enum.Enum):
    """What a run says about one artifact."""

    CANON = "canon"
    NON_CANON = "non_canon"
    INCOMPLETE = "incomplete"  # unscored questions and no evidence against it

    @property
    def label(self) -> str:
        """The word reports print: ``canon``, ``NON-CANON``, ``INCOMPLETE``."""
        return "canon" if self is Verdict.CANON else self.value.replace("_", "-").upper()

    @property
    def words(self) -> str:
        """How a count of them reads: ``canon``, ``non-canon``, ``incomplete``."""
        return self.value.replace("_", "-")


def verdict_of(result: ArtifactResult) -> Verdict:
    """The artifact's verdict: a failure on evidence is NON-CANON; a verdict the judge's
    failures left open is INCOMPLETE."""
    if result.canon:
        return Verdict.CANON
    return Verdict.NON_CANON if fails_on_evidence(result) else Verdict.INCOMPLETE


def verdict_counts(results: Sequence[ArtifactResult]) -> dict[Verdict, int]:
    """How many artifacts got each verdict (every verdict present, zero or not)."""
    counts = dict.fromkeys(Verdict, 0)
    for result in results:
        counts[verdict_of(result)] += 1
    return counts


def tally(results: Sequence[ArtifactResult]) -> str:
    """``2 canon, 1 non-canon, 3 incomplete``; the incomplete count only when there are any."""
    counts = verdict_counts(results)
    parts = [f"{counts[v]} {v.words}" for v in Verdict if v is not Verdict.INCOMPLETE]
    if counts[Verdict.INCOMPLETE]:
        parts.append(f"{counts[Verdict.INCOMPLETE]} incomplete (not judged)")
    return ", ".join(parts)


def judge_failures(results: Sequence[ArtifactResult]) -> list[tuple[str, int]]:
    """Why the judge failed, each distinct error once with how many questions it left
    unscored, in the order first seen."""
    return grouped([c.error or "no detail" for r in results for c in r.unscored])


def first_failure(results: Sequence[ArtifactResult]) -> str | None:
    """The first unscored question and why: ``key P1: HTTP 500 ...``; None when none."""
    for result in results:
        for cell in result.unscored:
            return f"{result.key} {cell.id}: {cell.error or 'no detail'}"
    return None
