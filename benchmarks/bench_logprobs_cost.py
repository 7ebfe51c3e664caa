"""What asking for log-probabilities costs the client (issue 23: ``logprobs: auto``).

A provider charges nothing for log-probabilities, but the reply grows: OpenAI returns
``top_logprobs`` rivals at every output token, and a judge reply is a reason of about sixty
tokens before its answer. This measures the client CPU per judge call with logprobs off and
on (8 rivals a token, as Canon asks for four-choice questions), on both call paths (direct
httpx and litellm), against the fake OpenAI server in a child process at zero latency, so the
CPU is the client's alone. Both settings run in one process, interleaved, several rounds.

Run: .venv/bin/python benchmarks/bench_logprobs_cost.py [--calls 800] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from canon.check.runner import ScoringPlan, score_artifacts
from canon.core.artifact import Artifact
from canon.judge.litellm_judge import LiteLLMJudge
from canon.project.store import constitution_from_file, load_rubric

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_judge_throughput import child_server

ROOT = Path(__file__).resolve().parent.parent
# About sixty tokens of reason, then the answer line (the fake server's tokens are words and
# single other characters).
REASON = (
    "The reply refunds the second of two identical charges and cites the section of the "
    "billing handbook that covers duplicates; it promises nothing the handbook does not, and "
    "it asks the customer for no account details."
)
_SERVER = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("fake", sys.argv[1])
fake = importlib.util.module_from_spec(spec); sys.modules["fake"] = fake
spec.loader.exec_module(fake)
with fake.running_fake_llm() as server:
    server.alternatives = int(sys.argv[3])  # rivals at every other token
    server.script("contradict any part", sys.argv[2] + "\\nANSWER: no", top={"no": 0.9, "yes": 0.1})
    server.script("", sys.argv[2] + "\\nANSWER: yes", top={"yes": 0.9, "partly": 0.1})
    print(server.base_url, flush=True)
    sys.stdin.read()
"""


def _plan(judge: LiteLLMJudge) -> ScoringPlan:
    constitution = constitution_from_file(ROOT / "examples" / "constitution.yaml")
    return ScoringPlan(constitution, load_rubric(), judge, threshold=0.85)


def _artifacts(questions: int) -> list[Artifact]:
    text = "I refunded duplicate charge {} (Section 4.2)."
    return [Artifact(text.format(i), id=f"a{i}") for i in range(questions // 10)]


def cpu_per_call(url: str, transport: str, logprobs: bool, calls: int) -> tuple[float, float]:
    """Client CPU milliseconds per call, and the mean top probability read (0.9 with
    logprobs: proof they were read; 1.0 without)."""
    judge = LiteLLMJudge(
        "openai/fake-judge",
        api_base=url,
        api_key="sk-bench",
        transport=transport,  # type: ignore[literal-required]
        logprobs=logprobs,
        structured_output=False,
    )
    plan = _plan(judge)
    asyncio.run(score_artifacts(plan, _artifacts(100), concurrency=16))  # warm up
    started = time.process_time()
    results = asyncio.run(score_artifacts(plan, _artifacts(calls), concurrency=16))
    cpu = (time.process_time() - started) / calls * 1000
    tops = [max(p for _, p in c.distribution) for r in results for c in r.cells if c.distribution]
    if len(tops) < calls:
        sys.exit(f"bench: only {len(tops)} of {calls} questions answered")
    return cpu, statistics.fmean(tops)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=800)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rivals", type=int, default=8, help="top_logprobs a token (8)")
    parser.add_argument("--only", choices=("direct", "litellm"))
    args = parser.parse_args()
    with child_server(_SERVER, REASON, str(args.rivals)) as url:
        for transport in [args.only] if args.only else ["direct", "litellm"]:
            seen: dict[bool, list[float]] = {False: [], True: []}
            tops: dict[bool, float] = {}
            for _ in range(args.rounds):
                for logprobs in (False, True):
                    cpu, tops[logprobs] = cpu_per_call(url, transport, logprobs, args.calls)
                    seen[logprobs].append(cpu)
            off, on = (statistics.median(seen[flag]) for flag in (False, True))
            print(
                f"{transport:<8} client CPU per call (median of {args.rounds} rounds of "
                f"{args.calls}): logprobs off {off:.2f} ms, on {on:.2f} ms, "
                f"on/off {on / off:.2f}x (mean top probability read: off {tops[False]:.2f}, "
                f"on {tops[True]:.2f})"
            )


if __name__ == "__main__":
    main()
