"""How honest is kappa's interval at the sample sizes people label, and what does it cost?

Seeded simulation: a person labels each artifact a violation with probability ``prevalence``;
the judge gives the person's label with probability ``accuracy`` and the other label
otherwise. The population kappa of that joint distribution is the truth; each trial draws
``n`` artifacts and asks whether the 95 % interval covers it: canon's interval
(``canon.core.agreement.kappa_interval``: the wider of the seeded percentile bootstrap with
2,000 resamples and the Wilson interval on agreement carried onto kappa), the bootstrap
alone, and the textbook large-sample interval (kappa -/+ 1.96 * sqrt(po (1 - po) /
(n (1 - pe)^2))). A trial where a method gives no interval counts as a miss for it.
Coverage is shown with its own 95 % Wilson interval. Also times ``agreement()`` for one
question at n = 40 and n = 400.

Run: .venv/bin/python benchmarks/bench_alignment.py [--trials 200]
"""

from __future__ import annotations

import argparse
import math
import random
import time

from canon.core.agreement import (
    LabelPair,
    agreement,
    bootstrap_interval,
    cohen_kappa,
    kappa_interval,
)
from canon.core.rubric import Choice, Question
from canon.core.stats import wilson_ci

QUESTION = Question(
    "P1", "principle", "?", (Choice("yes", 1.0), Choice("no", 0.0), Choice("n/a", None))
)


def population_kappa(prevalence: float, accuracy: float) -> float:
    """Kappa of the joint distribution itself."""
    judged_no = prevalence * accuracy + (1 - prevalence) * (1 - accuracy)
    chance = prevalence * judged_no + (1 - prevalence) * (1 - judged_no)
    return (accuracy - chance) / (1 - chance)


def draw(rng: random.Random, n: int, prevalence: float, accuracy: float) -> list[tuple[str, str]]:
    pairs = []
    for _ in range(n):
        person = "no" if rng.random() < prevalence else "yes"
        judge = person if rng.random() < accuracy else ("yes" if person == "no" else "no")
        pairs.append((person, judge))
    return pairs


def large_sample(pairs: list[tuple[str, str]]) -> tuple[float, float] | None:
    """Cohen's large-sample interval: kappa -/+ 1.96 * sqrt(po (1 - po) / (n (1 - pe)^2))."""
    kappa = cohen_kappa(pairs)
    if kappa is None:
        return None
    n = len(pairs)
    po = sum(a == b for a, b in pairs) / n
    labels = {label for pair in pairs for label in pair}
    pe = sum(
        sum(a == label for a, _ in pairs) * sum(b == label for _, b in pairs) for label in labels
    ) / (n * n)
    se = math.sqrt(po * (1 - po) / (n * (1 - pe) ** 2))
    return (kappa - 1.96 * se, kappa + 1.96 * se)


def coverage_row(n: int, prevalence: float, accuracy: float, trials: int, seed: int) -> str:
    truth = population_kappa(prevalence, accuracy)
    rng = random.Random(seed)
    hits = {"canon": 0, "bootstrap": 0, "large-sample": 0}
    widths: dict[str, list[float]] = {name: [] for name in hits}
    outside = 0  # large-sample intervals reaching past [-1, 1]
    for trial in range(trials):
        pairs = draw(rng, n, prevalence, accuracy)
        boot = bootstrap_interval(pairs, seed=trial)
        for name, interval in (
            ("canon", kappa_interval(pairs, seed=trial)),
            ("bootstrap", boot),
            ("large-sample", large_sample(pairs)),
        ):
            if interval is None:
                continue
            widths[name].append(interval[1] - interval[0])
            if interval[0] <= truth <= interval[1]:
                hits[name] += 1
            if name == "large-sample" and (interval[0] < -1 or interval[1] > 1):
                outside += 1
    cells = []
    for name, count in hits.items():
        low, high = wilson_ci(count, trials)
        mean_width = sum(widths[name]) / len(widths[name]) if widths[name] else math.nan
        cells.append(
            f"{name} {count}/{trials} = {count / trials:.1%} [{low:.1%}, {high:.1%}] "
            f"width {mean_width:.2f}"
        )
    return (
        f"n={n:<4} prevalence {prevalence:.2f} accuracy {accuracy:.2f} kappa {truth:.2f}: "
        + "; ".join(cells)
        + f"; large-sample past [-1, 1]: {outside}"
    )


def timing(n: int) -> str:
    rng = random.Random(7)
    pairs = [LabelPair(f"a{i}", a, b) for i, (a, b) in enumerate(draw(rng, n, 0.3, 0.85))]
    started = time.perf_counter()
    agreement(QUESTION, pairs)
    return f"agreement() for one question at n={n}: {time.perf_counter() - started:.3f} s"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=200)
    args = parser.parse_args()
    print(timing(40))
    print(timing(400))
    for index, (n, prevalence, accuracy) in enumerate(
        [
            (10, 0.3, 0.85),
            (20, 0.3, 0.85),
            (40, 0.3, 0.85),
            (40, 0.1, 0.9),
            (40, 0.5, 0.6),
            (100, 0.3, 0.85),
        ]
    ):
        print(coverage_row(n, prevalence, accuracy, args.trials, seed=index), flush=True)


if __name__ == "__main__":
    main()
