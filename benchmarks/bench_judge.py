"""Per-call overhead of LiteLLMJudge against the local fake OpenAI server.

Prints the median milliseconds per question (one at a time), questions per second with 8
in flight, and, for scale, the median of a bare stdlib HTTP round trip to the same server.
Run: .venv/bin/python benchmarks/bench_judge.py
"""

from __future__ import annotations

import asyncio
import http.client
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from canon.core.artifact import Artifact
from canon.judge.base import JudgeRequest
from canon.judge.litellm_judge import LiteLLMJudge
from canon.judge.litellm_module import load_litellm
from canon.project.store import constitution_from_file, load_rubric

ROOT = Path(__file__).resolve().parent.parent
SEQUENTIAL = 200
CONCURRENT = 400
CONCURRENCY = 8
REPEATS = 3


def _fake_server() -> Any:
    path = ROOT / "tests" / "judge" / "fake_llm_server.py"
    spec = importlib.util.spec_from_file_location("bench_fake_llm_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _requests() -> list[JudgeRequest]:
    constitution = constitution_from_file(ROOT / "examples" / "constitution.yaml")
    rubric = load_rubric()
    artifact = Artifact("I refunded the duplicate 19.99 EUR charge under Section 4.2.")
    return [
        JudgeRequest(q, artifact, constitution, rubric.instructions)
        for q in rubric.questions_for(constitution)
    ]


async def _sequential(judge: LiteLLMJudge, requests: list[JudgeRequest]) -> list[float]:
    timings = []
    for index in range(SEQUENTIAL):
        started = time.perf_counter()
        await judge.answer(requests[index % len(requests)])
        timings.append(time.perf_counter() - started)
    return timings


async def _concurrent(judge: LiteLLMJudge, requests: list[JudgeRequest]) -> float:
    limiter = asyncio.Semaphore(CONCURRENCY)

    async def one(index: int) -> None:
        async with limiter:
            await judge.answer(requests[index % len(requests)])

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(CONCURRENT)))
    return CONCURRENT / (time.perf_counter() - started)


def _bare_round_trips(port: int, count: int = 200) -> list[float]:
    connection = http.client.HTTPConnection("127.0.0.1", port)
    body = json.dumps({"model": "fake", "messages": [{"role": "user", "content": "x"}]})
    timings = []
    for _ in range(count):
        started = time.perf_counter()
        connection.request(
            "POST", "/v1/chat/completions", body, {"Content-Type": "application/json"}
        )
        connection.getresponse().read()
        timings.append(time.perf_counter() - started)
    connection.close()
    return timings


def main() -> None:
    started = time.perf_counter()
    load_litellm()
    print(f"litellm import (once per process): {time.perf_counter() - started:.2f} s")
    requests = _requests()
    with _fake_server().running_fake_llm() as server:
        server.script("contradict any part", "ANSWER: no")
        server.script("", "Looks fine.\nANSWER: yes")
        judge = LiteLLMJudge("openai/fake-judge", api_base=server.base_url, api_key="sk-bench")

        async def run() -> tuple[list[float], list[float]]:
            await judge.answer(requests[0])  # warm the client and connection pool
            medians, rates = [], []
            for _ in range(REPEATS):
                medians.append(statistics.median(await _sequential(judge, requests)) * 1000)
                rates.append(await _concurrent(judge, requests))
            return medians, rates

        medians, rates = asyncio.run(run())
        bare = statistics.median(_bare_round_trips(server.port)) * 1000
    print(f"LiteLLMJudge, one at a time: median {statistics.median(medians):.2f} ms/question")
    print(
        f"LiteLLMJudge, {CONCURRENCY} in flight: median {statistics.median(rates):.0f} questions/s"
    )
    print(f"bare stdlib HTTP round trip to the same server: median {bare:.2f} ms")


if __name__ == "__main__":
    main()
