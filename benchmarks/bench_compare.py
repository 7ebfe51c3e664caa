"""Time comparing 10,000 artifacts x 20 questions against a baseline.

Measures the pure comparison (``gate``: Layer 1 flips, Layer 2 paired t-test) and the
baseline's plain-data round trip. Run: .venv/bin/python benchmarks/bench_compare.py
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable

from canon.core.baseline import baseline_from_data, baseline_from_results, baseline_to_data
from canon.core.compare import gate
from canon.core.constitution import Constitution, Principle
from canon.core.scoring import Answer, ArtifactResult, judge_verdict, score_cell
from canon.core.significance import sign_flip_drop_test
from canon.project.store import dump_json, load_rubric

ARTIFACTS = 10_000
REPEATS = 5


def _run(questions, shift: int) -> list[ArtifactResult]:  # type: ignore[no-untyped-def]
    palette = [
        Answer({"yes": 1.0}),
        Answer({"yes": 0.6, "partly": 0.3, "n/a": 0.1}),
        Answer({"no": 1.0}),
        Answer({"n/a": 1.0}),
    ]
    results = []
    for a in range(ARTIFACTS):
        cells = [
            score_cell(q, Answer({"no": 1.0}) if q.kind == "gate" else palette[(a + i + shift) % 4])
            for i, q in enumerate(questions)
        ]
        results.append(judge_verdict(f"artifact-{a}", cells, 0.5))
    return results


def _time(label: str, action: Callable[[], object]) -> None:
    timings = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        action()
        timings.append(time.perf_counter() - start)
    print(
        f"{label}: median {statistics.median(timings):.3f} s over {REPEATS} runs "
        f"(min {min(timings):.3f}, max {max(timings):.3f})"
    )


def main() -> None:
    rubric = load_rubric()
    principles = tuple(Principle(f"principle number {i}") for i in range(14))
    constitution = Constitution("a mission", principles)
    questions = rubric.questions_for(constitution)
    assert len(questions) == 20
    accepted = _run(questions, 0)
    current = _run(questions, 2)  # "yes" cells become "no": many solid flips to report
    baseline = baseline_from_results(
        accepted, rubric=rubric, judge="mock", constitution=constitution.digest, threshold=0.5
    )
    sign_flip_drop_test([0.9, 0.8], [0.7, 0.75])  # import numpy and scipy once, untimed
    comparison = gate(current, baseline, 0.5)
    print(
        f"compared {ARTIFACTS} artifacts x {len(questions)} questions: "
        f"{len(comparison.flips)} flips, drop {comparison.drift.drop:.3f}, "
        f"p = {comparison.drift.test.p_value:.3g}"
    )
    _time("gate (Layer 1 + Layer 2)", lambda: gate(current, baseline, 0.5))
    text = dump_json(baseline_to_data(baseline))
    print(f"baseline file: {len(text) / 1e6:.1f} MB")
    _time("baseline to JSON text", lambda: dump_json(baseline_to_data(baseline)))
    _time(
        "baseline from JSON text",
        lambda: baseline_from_data(json.loads(text), source="bench.json"),
    )


if __name__ == "__main__":
    main()
