"""What the max_cost guard spends counting prompt tokens when requests are retried.

Each of 30 requests (10 questions about each of the example suite's first 3 artifacts) is
reserved and booked ATTEMPTS times on the same messages, as a question whose replies are
unreadable is retried. Prints how many times litellm's tokenizer ran, the median CPU
microseconds per reservation over REPEATS rounds (process time: the machine may be shared),
and the median CPU microseconds of one tokenizer run.
Run: .venv/bin/python benchmarks/bench_budget_reserve.py
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from canon.check.spend import BudgetJudge, Ledger, call_messages
from canon.core.artifact import Artifact
from canon.core.usage import Usage
from canon.judge.base import JudgeRequest
from canon.judge.litellm_judge import LiteLLMJudge
from canon.judge.litellm_module import load_litellm
from canon.project.store import constitution_from_file, load_rubric
from canon.project.suite import read_suite

MODEL = "openai/gpt-4o-mini"
ROOT = Path(__file__).resolve().parent.parent
ATTEMPTS = 3  # LiteLLMJudge's default max_attempts
ARTIFACTS = 3
REPEATS = 15


def _messages() -> list[list[dict[str, Any]]]:
    constitution = constitution_from_file(ROOT / "examples" / "constitution.yaml")
    rubric = load_rubric()
    artifacts: list[Artifact] = read_suite(ROOT / "examples" / "suite.yaml")[:ARTIFACTS]
    return [
        call_messages(JudgeRequest(q, a, constitution, rubric.instructions))
        for a in artifacts
        for q in rubric.questions_for(constitution)
    ]


def main() -> None:
    litellm = load_litellm()
    counted = [0]
    real_counter = litellm.token_counter

    def counting(*args: Any, **kwargs: Any) -> Any:
        counted[0] += 1
        return real_counter(*args, **kwargs)

    litellm.token_counter = counting
    requests = _messages()
    timings: list[float] = []
    for _ in range(REPEATS):
        counted[0] = 0
        guard = BudgetJudge(LiteLLMJudge(MODEL, api_key="sk-x"), Ledger(1e9, "bench"))
        started = time.process_time()
        for messages in requests:
            for _attempt in range(ATTEMPTS):
                reserved = guard.reserve(MODEL, messages, 1)
                guard.book(reserved, Usage(calls=1, prompt_tokens=400, completion_tokens=5))
        timings.append((time.process_time() - started) / (len(requests) * ATTEMPTS))
    reservations = len(requests) * ATTEMPTS
    print(f"{len(requests)} requests x {ATTEMPTS} attempts = {reservations} reservations")
    print(f"tokenizer runs per round: {counted[0]}")
    print(f"median per reservation: {statistics.median(timings) * 1e6:.1f} us")
    print(
        f"one tokenizer run: {_median_us(lambda m: real_counter(model=MODEL, messages=m)):.1f} us"
    )


def _median_us(work: Any) -> float:
    """Median microseconds of ``work(messages)`` over the 30 requests' messages, REPEATS times."""
    requests = _messages()
    times = []
    for _ in range(REPEATS):
        started = time.process_time()
        for messages in requests:
            work(messages)
        times.append((time.process_time() - started) / len(requests))
    return statistics.median(times) * 1e6


if __name__ == "__main__":
    main()
