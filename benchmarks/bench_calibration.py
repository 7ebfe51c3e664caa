"""How large is the ECE of a perfectly calibrated judge at the sample sizes people label?

Seeded simulation of a two-answer question: each trial draws ``n`` answers whose top-label
confidence is uniform on [0.5, 1.0] and which are right with exactly that probability (a
perfectly calibrated judge: its true ECE is 0), then measures the ECE ``canon align``
reports (``reliability_bins`` and ``expected_calibration_error``, 10 equal-width bins).
Prints, per n, the mean ECE over the trials and its 95th percentile, and beside them the
bound ``canon align`` shows (``calibrated_ece``: the same percentile estimated from one
sample's confidences with 200 seeded draws), which should land near the simulated one.
Also times ``calibration()`` (bound included) for one question at n = 40 and n = 4,000.

Run: .venv/bin/python benchmarks/bench_calibration.py [--trials 1000]
"""

from __future__ import annotations

import argparse
import random
import time

import canon.core.calibration as cal
from canon.core.rubric import Choice, Question

YES_NO = (Choice("yes", 1.0), Choice("no", 0.0), Choice("n/a", None))
QUESTION = Question("P1", "principle", "?", YES_NO)


def answers(rng: random.Random, n: int) -> list[tuple[float, bool]]:
    """``n`` top-label answers of a perfectly calibrated judge: (confidence, right)."""
    found = []
    for _ in range(n):
        confidence = rng.uniform(0.5, 1.0)
        found.append((confidence, rng.random() < confidence))
    return found


def forecasts(rng: random.Random, n: int) -> list[cal.Forecast]:
    """The same judge's answers on a yes/no question, as ``calibration()`` takes them."""
    found = []
    for confidence, right in answers(rng, n):
        label = "yes" if rng.random() < 0.5 else "no"
        top = label if right else ("no" if label == "yes" else "yes")
        other = "no" if top == "yes" else "yes"
        found.append(cal.Forecast({top: confidence, other: 1.0 - confidence}, label))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(f"perfectly calibrated judge, {args.trials} trials a row (seed {args.seed})")
    print(f"{'n':>6}  {'mean ECE':>9}  {'95th pct':>9}  {'bound shown':>11}")
    for n in (10, 20, 30, 50, 100, 300, 1000):
        values = sorted(
            cal.expected_calibration_error(cal.reliability_bins(answers(rng, n))) or 0.0
            for _ in range(args.trials)
        )
        mean = sum(values) / len(values)
        high = values[round(0.95 * (len(values) - 1))]
        bound = cal.calibrated_ece([c for c, _ in answers(rng, n)]) or 0.0
        print(f"{n:>6}  {mean:>9.3f}  {high:>9.3f}  {bound:>11.3f}")
    for n in (40, 4000):
        sample = forecasts(rng, n)
        start = time.perf_counter()
        repeats = max(1, 4000 // n)
        for _ in range(repeats):
            cal.calibration(QUESTION, sample)
        each = (time.perf_counter() - start) / repeats
        print(f"calibration() at n = {n}: {each * 1000:.3f} ms")


if __name__ == "__main__":
    main()
