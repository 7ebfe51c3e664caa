"""What ``samples: auto`` costs a judge read from labels alone: requests and wall time of one
``canon score`` pass at one answer an ask and at three (issue 23).

Against the fake OpenAI server on 127.0.0.1 answering in ``--latency`` seconds, through
Canon's runner at the default concurrency (8): the example's replies (``--copies`` each,
numbered), 11 questions each, ``logprobs: false`` (a provider without log-probabilities),
at ``samples: 1`` and ``samples: auto`` (three answers an ask at the re-ask temperature).
Two kinds of endpoint: one that takes ``n`` (three answers in one request, as OpenAI's does)
and one that ignores it (as Anthropic, Bedrock, Mistral and Ollama do through litellm: each
further answer is a request of its own, one after another within the ask's slot). Ratios
of auto over one are in one run, so the machine's load cancels.

Run: .venv/bin/python benchmarks/bench_samples_cost.py [--latency 0.1] [--copies 4]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from canon.check.runner import DEFAULT_CONCURRENCY, ScoringPlan, score_artifacts
from canon.judge.litellm_judge import LiteLLMJudge
from canon.project.store import constitution_from_file, load_rubric
from canon.project.suite import read_suite

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from support.helper_modules import load_helper  # noqa: E402

fake_llm_server = load_helper("judge/fake_llm_server.py")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--copies", type=int, default=4)
    args = parser.parse_args()
    example = ROOT / "examples"
    items = [
        dataclasses.replace(a, id=f"{a.id}-{i}", text=f"{a.text} ({i})", trace=None, response=None)
        for i in range(args.copies)
        for a in read_suite(example / "suite.yaml")
    ]
    constitution = constitution_from_file(example / "constitution.yaml")
    print(
        f"{len(items)} artifacts x 11 questions, {args.latency:g} s a reply, "
        f"concurrency {DEFAULT_CONCURRENCY}, logprobs: false"
    )
    with fake_llm_server.running_fake_llm() as fake:
        fake.latency = args.latency
        fake.script("", "ANSWER: yes")
        for takes_n in (True, False):
            fake.honour_n = takes_n
            seen = {}
            for samples in (1, "auto"):
                judge = LiteLLMJudge(
                    "openai/bench",
                    api_base=fake.base_url,
                    api_key="k",
                    logprobs=False,
                    samples=samples,
                    structured_output=False,
                )
                plan = ScoringPlan(constitution, load_rubric(), judge, 0.85)
                before = len(fake.requests)
                started = time.perf_counter()
                asyncio.run(score_artifacts(plan, items))
                seen[samples] = (time.perf_counter() - started, len(fake.requests) - before)
                wall, requests = seen[samples]
                print(
                    f"  endpoint {'takes n' if takes_n else 'ignores n'}, samples {samples} "
                    f"({judge.samples} an ask): {requests} requests, {wall:.2f} s"
                )
            (one, one_requests), (auto, auto_requests) = seen[1], seen["auto"]
            print(
                f"    auto over one: requests {auto_requests / one_requests:.2f}x, "
                f"wall {auto / one:.2f}x"
            )


if __name__ == "__main__":
    main()
