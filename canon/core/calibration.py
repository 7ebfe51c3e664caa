"""Calibration of a judge's probabilities against human labels, one question at a time.

Every judge answer is a distribution over the question's labels: a decision model's real
probabilities, an LLM judge's from log-probabilities or samples, a scripted judge's one-hot
choice. Against the label a person gave, ``canon align`` reports:

- the multi-class **Brier score**: per labelled artifact, the squared distance between the
  judge's distribution and the person's label as a one-hot vector, summed over the
  question's labels and averaged (0 is perfect, 2 is all mass on a wrong label), with
  Murphy's decomposition ``brier = reliability - resolution + uncertainty`` over the
  distinct forecasts;
- the top-label **expected calibration error**: the judge's confidence in its most likely
  label (``modal_label``, the answer kappa compares) against how often that label is the
  person's, in ``ECE_BINS`` equal-width bins of confidence, weighted by their counts;
- the bins themselves, the points of a reliability diagram;
- what a perfectly calibrated judge would show: the 95th percentile of the ECE of a judge
  with the same confidences that is right with exactly those probabilities (seeded). The
  ECE of a small sample is far from 0 even then (``benchmarks/bench_calibration.py``), so an
  ECE is read against this bound, not against 0.

A judge whose answers are all one-hot gets the same numbers, and they are then plain
accuracy: Brier ``2 * (1 - agreement)`` and ECE ``1 - agreement``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from canon.core.agreement import modal_label
from canon.core.rubric import Question
from canon.errors import UsageError

ECE_BINS = 10
# Below this many labels a question's bins hold about three answers each: its ECE moves
# with every label, so reports say it is too few to read.
FEW_LABELS = 30
CALIBRATION_METHOD = (
    f"Brier: multi-class, 0 perfect to 2 all mass on a wrong label; ECE: top-label, "
    f"{ECE_BINS} equal-width bins of confidence"
)
CALIBRATED_RESAMPLES = 200
CALIBRATED_SEED = 0
# Forecasts equal to this many decimals are one forecast in the Brier decomposition.
_SAME_FORECAST_DIGITS = 9
_ONE_HOT = 1.0 - 1e-9
# A confidence this close above a bin's lower edge belongs to that bin (0.3 * 10 is
# 2.9999999999999996 in floating point, yet 0.3 opens the bin [0.3, 0.4)).
_EDGE = 1e-9


@dataclass(frozen=True, slots=True)
class Forecast:
    """The judge's distribution on one labelled artifact, and the person's label."""

    distribution: Mapping[str, float]
    label: str


@dataclass(frozen=True, slots=True)
class Bin:
    """One bin of confidence, ``[low, high)`` (the last one holds 1.0 too)."""

    low: float
    high: float
    count: int
    confidence: float | None  # the mean top-label confidence in it; None when empty
    accuracy: float | None  # the share of its answers whose top label is the person's


@dataclass(frozen=True, slots=True)
class QuestionCalibration:
    """How well the judge's probabilities on one question match the human labels."""

    question: str
    principle: str | None
    n: int
    brier: float | None  # None with no labels
    reliability: float | None  # Murphy's decomposition of the Brier score
    resolution: float | None
    uncertainty: float | None  # the Brier score of always forecasting the label frequencies
    forecasts: int  # distinct forecasts the decomposition grouped by
    ece: float | None
    bins: tuple[Bin, ...]
    one_hot: bool  # every answer put all its mass on one label: the numbers are accuracy
    # The 95th percentile of the ECE a perfectly calibrated judge with these confidences
    # shows at this n (calibrated_ece); None with no labels.
    calibrated_ece: float | None = None

    @property
    def label(self) -> str:
        """The question as reports show it: ``P2`` or ``P2 [escalate-refunds]``."""
        return f"{self.question} [{self.principle}]" if self.principle else self.question

    @property
    def few(self) -> bool:
        """Too few labels for the ECE and its bins to be read as more than a sketch."""
        return self.n < FEW_LABELS


def _vector(forecast: Forecast, labels: Sequence[str]) -> list[float]:
    """The forecast's distribution over ``labels``, normalised; its label must be one."""
    distribution = forecast.distribution
    if forecast.label not in labels:
        raise UsageError(f"label {forecast.label!r} is not among {list(labels)}")
    unknown = set(distribution) - set(labels)
    if unknown:
        raise UsageError(f"forecast labels {sorted(unknown)} are not among {list(labels)}")
    total = sum(distribution.values())
    if not total > 0.0:
        raise UsageError("a forecast needs positive mass on some label")
    return [distribution.get(label, 0.0) / total for label in labels]


def brier_score(forecasts: Sequence[Forecast], labels: Sequence[str]) -> float | None:
    """The multi-class Brier score over ``labels``; None with no forecasts."""
    if not forecasts:
        return None
    total = 0.0
    for f in forecasts:
        vector = _vector(f, labels)
        total += sum((p - (label == f.label)) ** 2 for p, label in zip(vector, labels, strict=True))
    return total / len(forecasts)


def brier_decomposition(
    forecasts: Sequence[Forecast], labels: Sequence[str]
) -> tuple[float, float, float, int] | None:
    """Murphy's ``(reliability, resolution, uncertainty, distinct forecasts)``, grouping
    answers by their forecast; ``reliability - resolution + uncertainty`` is the Brier
    score. None with no forecasts."""
    n = len(forecasts)
    if n == 0:
        return None
    width = len(labels)
    groups: dict[tuple[float, ...], list[int]] = {}  # forecast -> counts of labels seen
    outcomes = [0] * width
    for f in forecasts:
        vector = _vector(f, labels)
        key = tuple(round(p, _SAME_FORECAST_DIGITS) for p in vector)
        seen = groups.setdefault(key, [0] * width)
        index = labels.index(f.label)
        seen[index] += 1
        outcomes[index] += 1
    base = [count / n for count in outcomes]
    reliability = resolution = 0.0
    for forecast, seen in groups.items():
        size = sum(seen)
        observed = [count / size for count in seen]
        reliability += size * sum((p - o) ** 2 for p, o in zip(forecast, observed, strict=True))
        resolution += size * sum((o - b) ** 2 for o, b in zip(observed, base, strict=True))
    uncertainty = sum(b * (1.0 - b) for b in base)
    return reliability / n, resolution / n, uncertainty, len(groups)


def reliability_bins(
    answers: Sequence[tuple[float, bool]], bins: int = ECE_BINS
) -> tuple[Bin, ...]:
    """Top-label ``(confidence, correct)`` answers in ``bins`` equal-width bins of [0, 1]."""
    if bins < 1:
        raise UsageError(f"reliability bins need a count >= 1, got {bins}")
    members: list[list[tuple[float, bool]]] = [[] for _ in range(bins)]
    for confidence, correct in answers:
        if not 0.0 <= confidence <= 1.0:
            raise UsageError(f"a confidence must be in [0, 1], got {confidence}")
        members[_bin_of(confidence, bins)].append((confidence, correct))
    found = []
    for index, inside in enumerate(members):
        count = len(inside)
        found.append(
            Bin(
                index / bins,
                (index + 1) / bins,
                count,
                sum(c for c, _ in inside) / count if count else None,
                sum(ok for _, ok in inside) / count if count else None,
            )
        )
    return tuple(found)


def _bin_of(confidence: float, bins: int) -> int:
    return min(int(confidence * bins + _EDGE), bins - 1)


def calibrated_ece(
    confidences: Sequence[float],
    bins: int = ECE_BINS,
    *,
    resamples: int = CALIBRATED_RESAMPLES,
    seed: int = CALIBRATED_SEED,
) -> float | None:
    """The 95th percentile of the ECE of a perfectly calibrated judge with these
    confidences: each answer right with exactly its confidence, ``resamples`` seeded draws.
    None with no confidences."""
    n = len(confidences)
    if n == 0:
        return None
    index = [_bin_of(c, bins) for c in confidences]
    expected = [0.0] * bins  # per bin, the sum of confidences: the right answers expected
    for c, b in zip(confidences, index, strict=True):
        expected[b] += c
    rng = random.Random(seed)
    found = []
    for _ in range(resamples):
        right = [0] * bins
        for c, b in zip(confidences, index, strict=True):
            right[b] += rng.random() < c
        found.append(sum(abs(r - e) for r, e in zip(right, expected, strict=True)) / n)
    found.sort()
    return found[round(0.95 * (len(found) - 1))]


def expected_calibration_error(bins: Sequence[Bin]) -> float | None:
    """The count-weighted mean gap between confidence and accuracy; None when empty."""
    n = sum(b.count for b in bins)
    if n == 0:
        return None
    return (
        sum(
            b.count * abs(b.accuracy - b.confidence)
            for b in bins
            if b.accuracy is not None and b.confidence is not None
        )
        / n
    )


def calibration(
    question: Question, forecasts: Sequence[Forecast], *, bins: int = ECE_BINS
) -> QuestionCalibration:
    """Everything ``canon align`` reports of calibration for one question."""
    labels = [c.label for c in question.choices]
    answers: list[tuple[float, bool]] = []
    one_hot = True
    for f in forecasts:
        vector = _vector(f, labels)
        top = modal_label(dict(zip(labels, vector, strict=True)))
        confidence = max(vector)
        one_hot = one_hot and confidence >= _ONE_HOT
        answers.append((min(1.0, confidence), top == f.label))
    parts = brier_decomposition(forecasts, labels)
    found = reliability_bins(answers, bins)
    return QuestionCalibration(
        question=question.id,
        principle=question.principle,
        n=len(forecasts),
        brier=brier_score(forecasts, labels),
        reliability=None if parts is None else parts[0],
        resolution=None if parts is None else parts[1],
        uncertainty=None if parts is None else parts[2],
        forecasts=0 if parts is None else parts[3],
        ece=expected_calibration_error(found),
        bins=found,
        one_hot=bool(forecasts) and one_hot,
        calibrated_ece=calibrated_ece([c for c, _ in answers], bins),
    )


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def calibration_to_data(found: QuestionCalibration, *, bins: bool = True) -> dict[str, Any]:
    """One question's calibration as plain data: the JSON report (with its bins) and the
    alignment file (``bins=False``: the summary only)."""
    data: dict[str, Any] = {
        "n": found.n,
        "brier": _round(found.brier),
        "brier_reliability": _round(found.reliability),
        "brier_resolution": _round(found.resolution),
        "brier_uncertainty": _round(found.uncertainty),
        "distinct_forecasts": found.forecasts,
        "ece": _round(found.ece),
        "ece_bins": len(found.bins),
        "ece_if_calibrated_95": _round(found.calibrated_ece),
        "one_hot": found.one_hot,
        "few_labels": found.few,
    }
    if bins:
        data["bins"] = [
            {
                "low": round(b.low, 6),
                "high": round(b.high, 6),
                "n": b.count,
                "confidence": _round(b.confidence),
                "accuracy": _round(b.accuracy),
            }
            for b in found.bins
        ]
    return data
