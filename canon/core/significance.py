"""One-sided tests of whether a mean score dropped beyond run-to-run noise.

This is the only module that imports scipy, and only inside the functions that need it:
``import canon`` and ``canon --help`` must stay fast.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

ALPHA = 0.05  # one-sided significance level for "the mean dropped"
# Below this variance the scores are treated as identical; scipy returns nan there, and a
# constant drop with no spread at all is not noise.
ZERO_VARIANCE = 1e-12

TestMethod = Literal["paired", "welch", "none"]


@dataclass(frozen=True, slots=True)
class DropTest:
    """The outcome of testing whether scores dropped from ``before`` to ``after``."""

    method: TestMethod  # "none" when there was too little data to test anything
    n: int  # pairs for the paired test; all scores for Welch
    drop: float | None  # mean(before) - mean(after); positive means scores fell
    p_value: float | None
    minimum_detectable: float | None  # the smallest mean drop this test could call real
    beyond_noise: bool
    detail: str  # how the verdict was reached, in words


def paired_drop_test(
    before: Sequence[float], after: Sequence[float], alpha: float = ALPHA
) -> DropTest:
    """Paired one-sided t-test over the same artifacts scored twice."""
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
    if variance <= ZERO_VARIANCE:
        # "+ 0.0" turns a negative zero into zero, so an unchanged run reads "+0.000".
        detail = f"every score moved by exactly {-drop + 0.0:+.3f} (zero variance, n = {n})"
        return _constant("paired", n, drop, detail)
    stats = _scipy_stats()
    result = stats.ttest_rel(before, after, alternative="greater")
    critical = float(stats.t.ppf(1.0 - alpha, n - 1))
    p_value = float(result.pvalue)
    return DropTest(
        method="paired",
        n=n,
        drop=drop,
        p_value=p_value,
        minimum_detectable=critical * math.sqrt(variance / n),
        beyond_noise=p_value < alpha,
        detail=f"paired t-test over {n} artifacts scored in both runs",
    )


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
        return _constant("welch", n, drop, detail)
    stats = _scipy_stats()
    result = stats.ttest_ind(before, after, equal_var=False, alternative="greater")
    # Welch-Satterthwaite degrees of freedom, the same ones scipy used for the p-value.
    df = se_squared**2 / (
        (var_before / len(before)) ** 2 / (len(before) - 1)
        + (var_after / len(after)) ** 2 / (len(after) - 1)
    )
    critical = float(stats.t.ppf(1.0 - alpha, df))
    p_value = float(result.pvalue)
    return DropTest(
        method="welch",
        n=n,
        drop=drop,
        p_value=p_value,
        minimum_detectable=critical * math.sqrt(se_squared),
        beyond_noise=p_value < alpha,
        detail=(
            f"Welch two-sample t-test ({len(before)} baseline vs {len(after)} current scores; "
            "no artifact matched)"
        ),
    )


def _scipy_stats() -> Any:
    # scipy takes most of a second to import; only a test that actually runs pays for it.
    from scipy import stats  # type: ignore[import-untyped]

    return stats


def _constant(method: TestMethod, n: int, drop: float, detail: str) -> DropTest:
    # Every score moved by exactly the same amount: there is no noise to hide behind, so
    # any drop at all is real and the smallest detectable drop is zero.
    return DropTest(
        method=method,
        n=n,
        drop=drop,
        p_value=0.0 if drop > 0 else 1.0,
        minimum_detectable=0.0,
        beyond_noise=drop > 0,
        detail=detail,
    )
