"""One-sided tests of whether a mean score dropped beyond run-to-run noise.

Matched artifacts are compared with an exact one-sided paired sign-flip permutation test:
under "nothing changed" the two runs are exchangeable, so each artifact's difference is as
likely positive as negative, whatever the shape of the judge's noise. Up to
``EXACT_PAIRS`` non-zero differences every sign pattern is counted; above, a seeded Monte
Carlo sample is. A paired bootstrap gives an interval for the drop, and the drop this test
would catch with 80 % power says whether the check could see a drop of the tolerance at all.

This is the only module that imports scipy and numpy, and only inside the functions that
need them: ``import canon`` and ``canon --help`` must stay fast.
"""

from __future__ import annotations

import hashlib
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

ALPHA = 0.05  # one-sided significance level for "the mean dropped"
# Below this variance the scores are treated as identical; scipy returns nan there, and a
# constant drop with no spread at all is not noise.
ZERO_VARIANCE = 1e-12

TestMethod = Literal["sign-flip", "welch", "none"]
EXACT_PAIRS = 16  # 2**16 sign patterns are counted exactly; more are sampled
MONTE_CARLO_ROUNDS = 20_000
# Above this many pairs the sign-flip statistic is a sum of so many bounded terms that its
# normal limit is closer than Monte Carlo's own error, and sampling would cost seconds.
NORMAL_PAIRS = 2_000
BOOTSTRAP_ROUNDS = 4_000
_CHUNK = 2_000_000  # sign draws per Monte Carlo chunk: bounded memory for big suites
POWER = 0.8  # the power at which the minimum detectable drop is stated


@dataclass(frozen=True, slots=True)
class DropTest:
    """The outcome of testing whether scores dropped from ``before`` to ``after``."""

    method: TestMethod  # "none" when there was too little data to test anything
    n: int  # pairs for the paired test; all scores for Welch
    drop: float | None  # mean(before) - mean(after); positive means scores fell
    p_value: float | None
    minimum_detectable: float | None  # the drop this test catches with 80 % power
    beyond_noise: bool
    detail: str  # how the verdict was reached, in words
    interval: tuple[float, float] | None = None  # 95 % interval for the drop
    # False when even the most extreme outcome this test allows (every difference a drop)
    # has a p-value above alpha: with so few artifacts no drop can be shown at all.
    can_reject: bool = True


def sign_flip_drop_test(
    before: Sequence[float], after: Sequence[float], alpha: float = ALPHA
) -> DropTest:
    """Exact one-sided paired sign-flip permutation test (Monte Carlo for many pairs)."""
    if len(before) != len(after):
        raise ValueError(f"paired scores differ in length: {len(before)} vs {len(after)}")
    n = len(before)
    if n == 0:
        return DropTest("none", 0, None, None, None, False, "no artifact was scored in both runs")
    diffs = [b - a for b, a in zip(before, after, strict=True)]
    drop = math.fsum(diffs) / n
    if n < 2:
        return DropTest(
            "none", 1, drop, None, None, False, "one matched artifact: too few to test for noise"
        )
    variance = statistics.variance(diffs)
    # No shortcut for equal moves: n equal drops are as extreme as n sign patterns allow, so
    # their exact p-value is 2**-n, never 0. Zero spread is not proof with two artifacts.
    floor = 2.0 ** -min(n, 1_074)  # the smallest p-value n pairs can give
    np = _numpy()
    rng = np.random.default_rng(_seed(diffs))
    moved = np.array([d for d in diffs if abs(d) > 1e-12])
    observed = float(moved.sum()) - 1e-9  # ties count as at least as extreme
    if len(moved) <= EXACT_PAIRS:
        patterns = ((np.arange(2 ** len(moved))[:, None] >> np.arange(len(moved))) & 1) * 2 - 1
        p_value = float(np.mean(patterns @ np.abs(moved) >= observed))
        how = f"exact over {2 ** len(moved)} sign patterns"
    elif len(moved) <= NORMAL_PAIRS:
        sizes = np.abs(moved)
        hits = 0
        rows = max(1, _CHUNK // len(moved))
        for start in range(0, MONTE_CARLO_ROUNDS, rows):
            count = min(rows, MONTE_CARLO_ROUNDS - start)
            signs = rng.integers(0, 2, size=(count, len(moved)), dtype=np.int8) * 2 - 1
            hits += int(np.count_nonzero(signs @ sizes >= observed))
        p_value = (hits + 1) / (MONTE_CARLO_ROUNDS + 1)
        how = f"Monte Carlo over {MONTE_CARLO_ROUNDS} sign patterns"
    else:
        spread = math.sqrt(float(np.sum(moved * moved)))
        p_value = float(_scipy_stats().norm.sf(observed / spread))
        how = "the sign-flip distribution's normal limit"
    if n <= NORMAL_PAIRS:
        picks = rng.integers(0, n, size=(BOOTSTRAP_ROUNDS, n))
        samples = np.array(diffs)[picks].mean(axis=1)
        low, high = (float(v) for v in np.quantile(samples, [0.025, 0.975]))
    else:  # the bootstrap's own limit, at a fraction of its cost
        half = 1.959964 * math.sqrt(variance / n)
        low, high = drop - half, drop + half
    p_value = max(p_value, floor)  # Monte Carlo and the normal limit must not go below it
    detail = f"paired sign-flip test over {n} artifacts scored in both runs ({how})"
    if floor >= alpha:
        detail += (
            f"; with {n} artifacts the smallest p-value it can give is {floor:.3g}, not below "
            f"{alpha:.3g}, so no drop can be shown: add artifacts"
        )
    return DropTest(
        method="sign-flip",
        n=n,
        drop=drop,
        p_value=p_value,
        minimum_detectable=None if floor >= alpha else _detectable(math.sqrt(variance), n, alpha),
        beyond_noise=floor < alpha and p_value < alpha,
        detail=detail,
        interval=(low, high),
        can_reject=floor < alpha,
    )


def _detectable(spread: float, n: int, alpha: float) -> float:
    # The mean drop a one-sided test at ``alpha`` catches with 80 % power, for differences
    # spread like these ones (the t approximation; the sign-flip test is close to it).
    stats = _scipy_stats()
    quantiles = float(stats.t.ppf(1.0 - alpha, n - 1)) + float(stats.t.ppf(POWER, n - 1))
    return quantiles * spread / math.sqrt(n)


def _seed(values: Sequence[float]) -> int:
    # The same scores give the same p-value and interval on every run of the check.
    material = ",".join(f"{v:.9f}" for v in values).encode("ascii")
    return int.from_bytes(hashlib.sha256(material).digest()[:8], "big")


def welch_drop_test(
    before: Sequence[float], after: Sequence[float], alpha: float = ALPHA
) -> DropTest:
    """Welch's one-sided two-sample t-test, for runs that share no artifact."""
    n = len(before) + len(after)
    if not before or not after:
        return DropTest("none", n, None, None, None, False, "one of the runs has no scores")
    drop = statistics.fmean(before) - statistics.fmean(after)
    if len(before) < 2 or len(after) < 2:
        return DropTest(
            "none", n, drop, None, None, False, "each run needs two scores to test for noise"
        )
    var_before, var_after = statistics.variance(before), statistics.variance(after)
    se_squared = var_before / len(before) + var_after / len(after)
    if se_squared <= ZERO_VARIANCE:
        detail = f"each run's scores are all equal (zero variance); the mean moved {-drop:+.3f}"
        # The permutation bound: the two runs' labels can be shuffled C(n, k) ways, and the
        # observed split is one of them, so no test of exchangeability gives less.
        floor = 1.0 / math.comb(n, len(before))
        return _constant("welch", n, drop, detail, floor, alpha)
    stats = _scipy_stats()
    result = stats.ttest_ind(before, after, equal_var=False, alternative="greater")
    # Welch-Satterthwaite degrees of freedom, the same ones scipy used for the p-value.
    df = se_squared**2 / (
        (var_before / len(before)) ** 2 / (len(before) - 1)
        + (var_after / len(after)) ** 2 / (len(after) - 1)
    )
    quantiles = float(stats.t.ppf(1.0 - alpha, df)) + float(stats.t.ppf(POWER, df))
    p_value = float(result.pvalue)
    half = float(stats.t.ppf(0.975, df)) * math.sqrt(se_squared)
    return DropTest(
        method="welch",
        n=n,
        drop=drop,
        p_value=p_value,
        minimum_detectable=quantiles * math.sqrt(se_squared),
        interval=(drop - half, drop + half),
        beyond_noise=p_value < alpha,
        detail=(
            f"Welch two-sample t-test ({len(before)} baseline vs {len(after)} current scores; "
            "no artifact matched)"
        ),
    )


def _numpy() -> Any:
    import numpy  # scipy's own dependency; imported only when a test runs

    return numpy


def _scipy_stats() -> Any:
    # scipy takes most of a second to import; only a test that actually runs pays for it.
    from scipy import stats  # type: ignore[import-untyped]

    return stats


def _constant(
    method: TestMethod, n: int, drop: float, detail: str, floor: float, alpha: float
) -> DropTest:
    # Every score in each run is the same: the most extreme split there is, whose p-value
    # is the test's floor (never 0). Any drop is then detectable iff the floor is below alpha.
    can_reject = floor < alpha
    return DropTest(
        method=method,
        n=n,
        drop=drop,
        p_value=floor if drop > 0 else 1.0,
        minimum_detectable=0.0 if can_reject else None,
        beyond_noise=drop > 0 and can_reject,
        detail=detail if can_reject else f"{detail}; too few scores to show a drop",
        interval=(drop, drop),
        can_reject=can_reject,
    )
