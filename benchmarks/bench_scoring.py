"""Time scoring 10,000 artifacts x 20 questions of precomputed judge answers.

Target (issue 2): under 0.5 s. Run: .venv/bin/python benchmarks/bench_scoring.py
"""

from __future__ import annotations

import statistics
import time

from canon.core.constitution import Constitution, Principle
from canon.core.scoring import Answer, judge_verdict, score_cell
from canon.project.store import load_rubric

ARTIFACTS = 10_000
REPEATS = 5


def main() -> None:
    principles = tuple(Principle(f"principle number {i}") for i in range(14))
    constitution = Constitution("a mission", principles)
    questions = load_rubric().questions_for(constitution)
    assert len(questions) == 20
    palette = [
        Answer({"yes": 1.0}),
        Answer({"yes": 0.6, "partly": 0.3, "n/a": 0.1}),
        Answer({"no": 1.0}),
        Answer({"n/a": 1.0}),
    ]
    # Precomputed answers: each artifact gets a fixed pattern; the gate always says "no".
    answers = [
        [
            Answer({"no": 1.0}) if q.kind == "gate" else palette[(a + i) % len(palette)]
            for i, q in enumerate(questions)
        ]
        for a in range(ARTIFACTS)
    ]
    timings = []
    cpu = []
    for _ in range(REPEATS):
        start, start_cpu = time.perf_counter(), time.process_time()
        for index, row in enumerate(answers):
            cells = [score_cell(q, ans) for q, ans in zip(questions, row, strict=True)]
            judge_verdict(str(index), cells, 0.85)
        timings.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    cells = ARTIFACTS * len(questions)
    median = statistics.median(timings)
    print(f"scored {ARTIFACTS} artifacts x {len(questions)} questions ({cells} cells)")
    print(
        f"median {median:.3f} s over {REPEATS} runs (min {min(timings):.3f}, "
        f"max {max(timings):.3f}); CPU median {statistics.median(cpu):.3f} s; target < 0.5 s"
    )


if __name__ == "__main__":
    main()
