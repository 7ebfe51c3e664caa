"""Whether the judge can separate a regression at all: too noisy, or one label everywhere.

A check that fails on a judge's noise is no better than a coin. Two signs say the judge
cannot tell a regression from its own mistakes in this run: its re-asks disagree with each
other more than the decision rule assumes (the Wilson interval's lower end is above
``flip_rate``), or it gives one answer to almost every question of a kind whose answers
varied in the baseline (a judge stuck on "no" reads every artifact as a regression).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from canon.core.baseline import Baseline, recorded_question
from canon.core.comparison import ReaskNoise
from canon.core.scoring import ArtifactResult

# One label on at least this share of a kind's cells is "almost everywhere" ...
ONE_LABEL_SHARE = 0.95
# ... when the baseline gave that label to at most this share of the same kind ...
VARIED_SHARE = 0.8
# ... and both sides have at least this many cells, so a small suite is not called stuck.
MIN_CELLS = 20


def inconclusive_reasons(
    noise: ReaskNoise | None, results: Sequence[ArtifactResult], baseline: Baseline
) -> tuple[str, ...]:
    """Why this run's judge is too noisy to separate a regression; empty when it is not."""
    reasons: list[str] = []
    if noise is not None and noise.noisier_than_assumed:
        low = noise.rate.interval[0]
        reasons.append(
            f"the judge's re-asks disagreed with their majority answer on {noise.rate}, "
            f"at least {low:.0%} against the flip rate of {noise.assumed_flip_rate:.0%} the "
            "check assumes"
        )
    now = _labels_now(results)
    then = _labels_then(results, baseline)
    for kind in sorted(now):
        label, share, cells = _top(now[kind])
        before = then.get(kind, {})
        total = sum(before.values())
        if cells < MIN_CELLS or total < MIN_CELLS or share < ONE_LABEL_SHARE:
            continue
        baseline_share = before.get(label, 0) / total
        if baseline_share <= VARIED_SHARE:
            reasons.append(
                f"the judge answered {label!r} on {now[kind][label]} of {cells} {kind} "
                f"question(s), where the baseline gave that answer on {before.get(label, 0)} "
                f"of {total}"
            )
    return tuple(reasons)


def _modal(distribution: Sequence[tuple[str, float]]) -> str | None:
    if not distribution:
        return None
    return max(sorted(distribution), key=lambda pair: pair[1])[0]


def _labels_now(results: Sequence[ArtifactResult]) -> dict[str, dict[str, int]]:
    tallies: dict[str, dict[str, int]] = {}
    for result in results:
        for cell in result.cells:
            label = _modal(cell.distribution) if cell.state != "unscored" else None
            if label is not None:
                kind = tallies.setdefault(cell.question.kind, {})
                kind[label] = kind.get(label, 0) + 1
    return tallies


def _labels_then(
    results: Sequence[ArtifactResult], baseline: Baseline
) -> dict[str, dict[str, int]]:
    # The baseline's rows of the questions asked now, through the same matching as flips.
    questions = {cell.id: cell.question for result in results for cell in result.cells}
    tallies: dict[str, dict[str, int]] = {}
    for record in baseline.artifacts.values():
        for question in questions.values():
            row = recorded_question(record, question)
            if row is None or row.state == "unscored" or not row.distribution:
                continue
            label = _modal(row.distribution)
            if label is not None:
                kind = tallies.setdefault(question.kind, {})
                kind[label] = kind.get(label, 0) + 1
    return tallies


def _top(counts: Mapping[str, int]) -> tuple[str, float, int]:
    total = sum(counts.values())
    label = max(sorted(counts), key=lambda name: counts[name])
    return label, counts[label] / total, total
