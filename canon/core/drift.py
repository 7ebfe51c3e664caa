"""Layer 2 of the check: did the mean (uncapped) score drop beyond the tolerance and noise?

Pairs are the artifacts scored in both runs, except those whose text is identical to the
baseline's (only the judge could move them); without pairs the runs are compared unpaired.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from canon.core.baseline import ArtifactRecord, Baseline
from canon.core.comparison import Drift
from canon.core.scoring import ArtifactResult
from canon.core.significance import DropTest, sign_flip_drop_test, welch_drop_test


def optimistic_raw(result: ArtifactResult) -> float | None:
    """The uncapped mean with every unscored question at its best score.

    A partial judge outage must never look like a drop: Layer 2 compares this bound.
    """
    scores = [c.score for c in result.cells if c.state == "answered" and c.score is not None]
    scores.extend(1.0 for c in result.cells if c.state == "unscored")
    return sum(scores) / len(scores) if scores else None


def recorded_raw(record: ArtifactRecord) -> float | None:
    """A baseline record's uncapped mean (its questions'), or its score in old formats."""
    if not record.questions:
        return record.score
    scores = [
        q.score for q in record.questions.values() if q.state == "answered" and q.score is not None
    ]
    return sum(scores) / len(scores) if scores else record.score


def layer2(
    results: Sequence[ArtifactResult],
    baseline: Baseline,
    tolerance: float,
    alpha: float,
    unchanged: frozenset[str] = frozenset(),
) -> Drift:
    """Test whether the matched artifacts' uncapped mean dropped beyond noise (Layer 2)."""
    before: list[float] = []
    after: list[float] = []
    for result in results:
        if result.key in unchanged:
            continue  # an identical text: only the judge could move its score
        record = baseline.artifacts.get(result.key)
        now = optimistic_raw(result) if result.cells else result.raw_score
        then = None if record is None else recorded_raw(record)
        if then is not None and now is not None:
            before.append(then)
            after.append(now)
    if before:
        test = sign_flip_drop_test(before, after, alpha)
    elif unchanged:
        detail = "every matched artifact's text is identical to the baseline's"
        test = DropTest("none", 0, None, None, None, False, detail)
    else:
        before = [s for r in baseline.artifacts.values() if (s := recorded_raw(r)) is not None]
        after = [
            s for r in results if (s := (optimistic_raw(r) if r.cells else r.raw_score)) is not None
        ]
        test = welch_drop_test(before, after, alpha)
    return Drift(
        baseline_mean=statistics.fmean(before) if before else None,
        current_mean=statistics.fmean(after) if after else None,
        tolerance=float(tolerance),
        test=test,
    )
