"""Judge throughput at scale: client CPU per call, and whole runs against a slow endpoint.

The fake OpenAI server runs in a child process, so the CPU measured here is the client's
alone. It prints, for both call paths (litellm, and the direct one), and for litellm's own
floor (``bare``: the same request bodies sent with ``litellm.acompletion`` under a plain
semaphore, no Canon):

- client CPU per judge call against a zero-latency server (questions asked 16 at a time);
- 3,200 questions at concurrency 64 against 0.2 s latency (ideal 10 s), side by side in one
  run: direct (target <= 1.15x), litellm through Canon (target <= 1.3x, or < 10 % over the
  bare floor when litellm's own CPU is what bounds it) and the bare floor;
- 1,600 questions at concurrency 16 against 0.5 s latency (ideal 50 s; target <= 1.15x),
  then the unchanged re-run through the answer cache (target: 0 judge calls).

Run: .venv/bin/python benchmarks/bench_judge_throughput.py [--quick] [--profile] [--runs N]
(--quick: the CPU figures only; --profile: what dominates the client's CPU per call;
--runs: repeat the side-by-side runs, for a noisy machine)
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from canon.check.runner import ScoringPlan, score_artifacts
from canon.core.artifact import Artifact
from canon.core.prompt import render_prompt
from canon.judge.cache import CachingJudge, cached_judge
from canon.judge.litellm_judge import LiteLLMJudge
from canon.judge.litellm_module import load_litellm
from canon.judge.request_body import request_body
from canon.project.store import constitution_from_file, load_rubric

ROOT = Path(__file__).resolve().parent.parent
_SERVER = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("fake", sys.argv[1])
fake = importlib.util.module_from_spec(spec); sys.modules["fake"] = fake
spec.loader.exec_module(fake)
with fake.running_fake_llm() as server:
    server.latency = float(sys.argv[2])
    server.script("contradict any part", "ANSWER: no")
    server.script("", "ANSWER: yes")
    print(server.base_url, flush=True)
    sys.stdin.read()
"""


@contextmanager
def fake_server(latency: float) -> Iterator[str]:
    """A fake OpenAI server in a child process; yields its base URL."""
    with child_server(_SERVER, str(latency)) as url:
        yield url


@contextmanager
def child_server(program: str, *args: str) -> Iterator[str]:
    """Run ``program`` (given the fake server module's path, then ``args``) in a child
    process until the block ends; yields the base URL it prints."""
    path = ROOT / "tests" / "judge" / "fake_llm_server.py"
    child = subprocess.Popen(
        [sys.executable, "-c", program, str(path), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        yield child.stdout.readline().strip()
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=30)


def _plan(judge: object) -> ScoringPlan:
    constitution = constitution_from_file(ROOT / "examples" / "constitution.yaml")
    return ScoringPlan(
        constitution=constitution,
        rubric=load_rubric(),
        judge=judge,  # type: ignore[arg-type]
        threshold=0.85,
    )


def _artifacts(questions: int) -> list[Artifact]:
    count = questions // 10  # the example constitution gives ten questions per artifact
    text = "I refunded duplicate charge {} (Section 4.2)."
    return [Artifact(text.format(i), id=f"a{i}") for i in range(count)]


def _judge(base_url: str, transport: str) -> LiteLLMJudge:
    return LiteLLMJudge(
        "openai/fake-judge",
        api_base=base_url,
        api_key="sk-bench",
        transport=transport,  # type: ignore[arg-type]
    )


def _run(plan: ScoringPlan, questions: int, concurrency: int) -> float:
    started = time.perf_counter()
    results = asyncio.run(score_artifacts(plan, _artifacts(questions), concurrency=concurrency))
    elapsed = time.perf_counter() - started
    unscored = sum(len(r.unscored) for r in results)
    if unscored:
        sys.exit(f"bench: {unscored} questions unscored: {results[0].unscored[:1]}")
    return elapsed


def _bodies(questions: int) -> list[dict[str, object]]:
    """The request bodies Canon sends for ``questions`` questions (the fake model: no schema;
    log-probabilities asked for, as ``logprobs: auto`` does for an ``openai/`` model)."""
    plan = _plan(None)
    bodies = []
    for artifact in _artifacts(questions):
        for question in plan.rubric.questions_for(plan.constitution):
            messages = render_prompt(
                question, artifact.text, plan.constitution, plan.rubric.instructions
            ).as_messages()
            bodies.append(
                request_body(
                    messages,
                    question,
                    0,
                    0.0,
                    max_tokens=None,
                    constrain_answers=False,
                    structured=False,
                    logprobs=True,  # as the judge asks an openai/ model (logprobs: auto)
                )
            )
    return bodies


def _bare(base_url: str, bodies: list[dict[str, object]], concurrency: int) -> float:
    """Send ``bodies`` with bare litellm.acompletion, ``concurrency`` at a time; wall seconds."""
    litellm = load_litellm()

    async def run() -> None:
        gate = asyncio.Semaphore(concurrency)

        async def one(body: dict[str, object]) -> None:
            async with gate:
                response = await litellm.acompletion(
                    **body,
                    model="openai/fake-judge",
                    api_base=base_url,
                    api_key="sk-bench",
                    timeout=30,
                    max_retries=0,
                    drop_params=True,
                )
                if not response.choices[0].message.content:
                    sys.exit("bench: the bare litellm call got an empty reply")

        await asyncio.gather(*(one(body) for body in bodies))

    started = time.perf_counter()
    asyncio.run(run())
    return time.perf_counter() - started


def bare_cpu_per_call(calls: int = 800) -> float:
    """Client CPU milliseconds per bare litellm call against a zero-latency server."""
    with fake_server(0.0) as url:
        _bare(url, _bodies(100), 16)  # warm up
        bodies = _bodies(calls)
        started = time.process_time()
        _bare(url, bodies, 16)
        return (time.process_time() - started) / calls * 1000


def cpu_per_call(transport: str, calls: int = 800, profile: bool = False) -> float:
    """Client CPU milliseconds per judge call against a zero-latency server."""
    with fake_server(0.0) as url:
        plan = _plan(_judge(url, transport))
        _run(plan, 100, 16)  # warm up: imports, connections, the limiter's slow start
        profiler = cProfile.Profile() if profile else None
        started = time.process_time()
        if profiler is not None:
            profiler.enable()
        _run(plan, calls, 16)
        if profiler is not None:
            profiler.disable()
        cpu = (time.process_time() - started) / calls * 1000
    if profiler is not None:
        print(f"--- {transport}: top functions by cumulative time ---")
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(18)
    return cpu


def scale(transport: str, questions: int, concurrency: int, latency: float) -> tuple[float, float]:
    """One large run against ``latency`` seconds per reply; prints it, returns (wall, CPU) s.

    ``transport`` "bare" is litellm's floor: the same bodies through litellm.acompletion alone.
    """
    ideal = questions / concurrency * latency
    with fake_server(latency) as url:
        if transport == "bare":
            bodies = _bodies(questions)
            cpu = time.process_time()
            elapsed = _bare(url, bodies, concurrency)
        else:
            plan = _plan(_judge(url, transport))
            cpu = time.process_time()
            elapsed = _run(plan, questions, concurrency)
        cpu = time.process_time() - cpu
    print(
        f"  {transport:8} {questions} questions, concurrency {concurrency}, {latency} s: "
        f"{elapsed:6.2f} s = {elapsed / ideal:.3f}x ideal ({ideal:.0f} s); client CPU "
        f"{cpu:5.2f} s",
        flush=True,
    )
    return elapsed, cpu


def rerun_from_cache(transport: str) -> None:
    """1,600 questions at 0.5 s and concurrency 16, then the unchanged re-run via the cache."""
    with tempfile.TemporaryDirectory() as scratch, fake_server(0.5) as url:
        cache = Path(scratch) / "cache.sqlite3"
        for label in ("first run", "re-run"):
            judge = cached_judge(_judge(url, transport), cache)
            assert isinstance(judge, CachingJudge)
            elapsed = _run(_plan(judge), 1600, 16)
            print(
                f"  {transport:8} 1600 questions, concurrency 16, 0.5 s, {label}: "
                f"{elapsed:6.2f} s = {elapsed / 50:.3f}x ideal (50 s); judge calls "
                f"{judge.misses}",
                flush=True,
            )
            judge.cache.close()


def main() -> None:
    """Print every figure; see the module docstring."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--runs", type=int, default=1)
    arguments = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    load_litellm()
    print("client CPU per judge call, zero-latency server, 16 in flight:")
    litellm_cpu = cpu_per_call("litellm", profile=arguments.profile)
    floor_cpu = bare_cpu_per_call()
    direct_cpu = cpu_per_call("direct", profile=arguments.profile)
    print(f"  litellm  {litellm_cpu:.2f} ms")
    print(f"  bare     {floor_cpu:.2f} ms (litellm.acompletion alone: the floor)")
    print(f"  direct   {direct_cpu:.2f} ms")
    print(f"  Canon adds {litellm_cpu / floor_cpu - 1:+.1%} to litellm's own CPU per call")
    if arguments.quick:
        return
    print("3,200 questions at concurrency 64, 0.2 s a reply (ideal 10 s), side by side:")
    for run in range(arguments.runs):
        # litellm and its floor in turn, so a load change on a shared machine hits both
        order = ("direct", "litellm", "bare") if run % 2 == 0 else ("bare", "litellm", "direct")
        runs = {t: scale(t, 3200, 64, 0.2) for t in order}
        (direct, _), (litellm, litellm_cpu), (bare, bare_cpu) = (
            runs["direct"],
            runs["litellm"],
            runs["bare"],
        )
        print(
            f"  run {run + 1}: direct {direct / 10:.3f}x (target <= 1.15x), litellm "
            f"{litellm / 10:.3f}x (target <= 1.3x), bare litellm {bare / 10:.3f}x; over the "
            f"bare floor Canon adds {litellm / bare - 1:+.1%} wall time and "
            f"{litellm_cpu / bare_cpu - 1:+.1%} client CPU (target < 10 %)",
            flush=True,
        )
    rerun_from_cache("direct")


if __name__ == "__main__":
    main()
