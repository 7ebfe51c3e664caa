"""Whether the judge can separate a regression at all: too noisy, one label, both ways.

A check that fails on a judge's noise is no better than a coin. Three signs say the judge
cannot tell a regression from its own mistakes in this run: its re-asks disagree with each
other more than the decision rule assumes (the 99 % Wilson interval's lower end is above
``flip_rate``); it gives one answer to almost every question of a kind whose answers
varied in the baseline (a judge stuck on "no" reads every artifact as a regression); or,
on reworded texts, it moves about as many artifacts back to canon as it moves out of it.
The last is the sign of a judge whose misreadings stick to a text: re-asking such a judge
repeats its misreading, so each move looks confirmed, but the agent did not change in
both directions at once. A real regression moves one way; the rewording noise moves
both, so the moves toward passing are the control the moves toward failing are tested
against (a one-sided sign test).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

from canon.core.baseline import ArtifactRecord, Baseline, recorded_question
from canon.core.comparison import ReaskNoise
from canon.core.scoring import ArtifactResult

# One label on at least this share of a kind's cells is "almost everywhere" ...
ONE_LABEL_SHARE = 0.95
# ... when the baseline gave that label to at most this share of the same kind ...
VARIED_SHARE = 0.8
# ... and both sides have at least this many cells, so a small suite is not called stuck.
MIN_CELLS = 20
# Moves toward passing needed before they count as a control: one can be a true fix or
# a single noisy pass on a truly failing artifact; two on one run is a pattern.
MIN_IMPROVED = 2


def inconclusive_reasons(
    noise: ReaskNoise | None,
    results: Sequence[ArtifactResult],
    baseline: Baseline,
    *,
    regressed: Collection[str] = (),
    unchanged: Collection[str] = (),
    alpha: float = 0.05,
) -> tuple[str, ...]:
    """Why this run's judge is too noisy to separate a regression; empty when it is not.

    ``regressed`` names the artifacts that would fail the check, ``unchanged`` those whose
    text is the baseline's own (they cannot move by rewording, so they are left out).
    """
    reasons: list[str] = []
    both_ways = _both_ways(results, baseline, regressed, unchanged, alpha)
    if both_ways is not None:
        reasons.append(both_ways)
    if noise is not None and noise.far_noisier_than_assumed:
        low = noise.rate.strict_interval[0]
        reasons.append(
            f"the judge's re-asks disagreed with their majority answer on {noise.rate}, "
            f"at least {low:.0%} (99 % interval) against the flip rate of "
            f"{noise.assumed_flip_rate:.0%} the check assumes"
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


def _both_ways(
    results: Sequence[ArtifactResult],
    baseline: Baseline,
    regressed: Collection[str],
    unchanged: Collection[str],
    alpha: float,
) -> str | None:
    failing = set(regressed) - set(unchanged)
    improved = sorted(
        r.key
        for r in results
        if r.key not in failing
        and r.key not in unchanged
        and _improved(r, baseline.artifacts.get(r.key))
    )
    if not failing or len(improved) < MIN_IMPROVED:
        return None
    p = sign_test_p(len(failing), len(improved))
    if p <= alpha:
        return None
    shown = ", ".join(improved[:5]) + (" …" if len(improved) > 5 else "")
    return (
        f"on texts reworded since the baseline the judge moved {len(failing)} artifact(s) "
        f"to failing and {len(improved)} back to passing ({shown}); a judge whose readings "
        f"follow the wording moves both ways alike, and {len(failing)} of "
        f"{len(failing) + len(improved)} is not beyond that (sign test p = {p:.2f}): give "
        "each artifact several responses (replicates) or use a steadier judge"
    )


def _improved(result: ArtifactResult, record: ArtifactRecord | None) -> bool:
    """Non-canon in the baseline, canon now.

    Only whole verdicts count: a baseline's non-canon verdict was confirmed when it was
    accepted, as settled as the confirmed failures it is set against. A single violated
    answer the baseline never re-asked is not (under independent noise at 15 % about one
    such answer a run reads satisfied again, which would mask a real regression).
    """
    return record is not None and record.canon is False and result.canon


def sign_test_p(toward_failing: int, toward_passing: int) -> float:
    """One-sided sign test: the chance of this many moves toward failing by a fair coin."""
    n = toward_failing + toward_passing
    tail = sum(math.comb(n, k) for k in range(toward_failing, n + 1))
    return float(tail / 2**n)


def _modal(distribution: Sequence[tuple[str, float]]) -> str | None:
    """The label with the most mass; None on a tie, which names no label."""
    if not distribution:
        return None
    ranked = sorted(distribution, key=lambda pair: pair[1], reverse=True)
    if len(ranked) > 1 and math.isclose(ranked[0][1], ranked[1][1]):
        # Two asks that disagree tie; picking the alphabetically first label read ties
        # as "no", so a noisy baseline looked varied and a steady run looked stuck.
        return None
    return ranked[0][0]


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
