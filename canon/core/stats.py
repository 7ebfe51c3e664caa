"""Small, exact statistics used by scoring and reports."""

from __future__ import annotations

import math

from canon.errors import UsageError


def wilson_ci(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial rate; with no trials, the honest (0, 1)."""
    if isinstance(successes, bool) or isinstance(trials, bool):
        raise UsageError("wilson_ci takes whole numbers, not booleans")
    if not isinstance(successes, int) or not isinstance(trials, int):
        raise UsageError(f"wilson_ci takes whole numbers, got {successes!r} and {trials!r}")
    if trials < 0 or not 0 <= successes <= trials:
        raise UsageError(f"wilson_ci needs 0 <= successes <= trials, got {successes}/{trials}")
    if not math.isfinite(z) or z <= 0:
        raise UsageError(f"wilson_ci needs a positive z, got {z}")
    if trials == 0:
        return (0.0, 1.0)
    rate = successes / trials
    z2 = z * z
    denominator = 1.0 + z2 / trials
    centre = (rate + z2 / (2 * trials)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / trials + z2 / (4 * trials * trials)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))
