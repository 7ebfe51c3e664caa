"""What judging 1,000 artifacts costs with a decision model and with an LLM, and how long a
run takes against a decision server answering in 0.4 s.

Part 1 (no server, nothing asked): ``estimate_run`` for 1,000 artifacts of the bundled
example's size (its three replies and requests, each numbered) under the example's
constitution plus one principle (11 questions, 3 wordings each), for Jev
(``typesafe:jev-1.13.0``), gpt-6-luna (``openai-decisions:gpt-6-luna``) and the LLM path
(one call per question, first ask only) at several list prices. Requests, input tokens and
dollars side by side; the decision path's dollars over the LLM path's.

Part 1 also prices the LLM path asking what one decision call asks (every question in every
wording: 33 calls an artifact), like for like.

Part 1b: the same, per command, from the estimate (the requests each would send before any
re-ask a failure needs): ``canon score``, ``canon accept`` (the LLM path gives every answer a
second look) and ``canon check`` of a fresh agent run (every text reworded: the LLM path gives
each changed artifact's gate a second look), and one accept + check cycle.

Part 0: what one call about the first example artifact sends on each wire, part by part: the
state (or OpenAI's input text) and the questions' instructions and options, in characters and
in estimated tokens (what the estimate counts: the parts the model reads, a token per 4
characters of their compact JSON, rounded up per part; ids and the model name are not read),
and GPT-4o's tokenizer's count of the same parts for comparison (the wires publish none).

Part 2: the same 1,000 artifacts scored through Canon's runner (one call per artifact)
against jevcompat's mock (a child process) behind a 0.4 s delay, at the default concurrency
(8); the wall time over the ideal (requests x 0.4 s / 8), and the input tokens the mock
billed (its usage.input_tokens) next to the estimate's.

Run: .venv/bin/python benchmarks/bench_decision_cost.py [--artifacts N] [--latency S]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from canon.check.pipeline import baseline_from_run, score_run
from canon.check.runner import DEFAULT_CONCURRENCY, ScoringPlan, score_artifacts
from canon.check.spend import estimate_requests, estimate_run, pending_requests
from canon.core.artifact import Artifact
from canon.core.constitution import Principle
from canon.core.scoring import Answer
from canon.judge.decisions.asking import asked_question, compact, decision_state
from canon.judge.decisions.judge import DecisionJudge
from canon.judge.litellm_judge import LiteLLMJudge
from canon.judge.litellm_module import load_litellm
from canon.project.store import constitution_from_file, load_rubric
from canon.project.suite import read_suite

EXAMPLE = Path(__file__).resolve().parent.parent / "examples"
LLMS = ("openai/gpt-4o-mini", "openai/gpt-4.1-mini", "openai/gpt-4o")


def artifacts(count: int) -> list[Artifact]:
    """``count`` artifacts of the example's size: its replies and requests, numbered."""
    found = read_suite(EXAMPLE / "suite.yaml")
    return [
        dataclasses.replace(
            found[i % len(found)],
            text=f"{found[i % len(found)].text} (ticket {i})",
            id=f"a{i}",
            trace=None,
            response=None,
        )
        for i in range(count)
    ]


def plan_for(judge: object) -> ScoringPlan:
    constitution = constitution_from_file(EXAMPLE / "constitution.yaml")
    extra = Principle("Answer in the customer's language.", id="same-language")
    constitution = dataclasses.replace(constitution, principles=(*constitution.principles, extra))
    return ScoringPlan(constitution, load_rubric(), judge, threshold=0.85)  # type: ignore[arg-type]


def call_parts() -> None:
    """One call about the first example artifact, part by part, on each wire."""
    litellm = load_litellm()
    print("one call about the first example artifact (characters / estimated tokens):")
    for wire, model in (("typesafe", "jev-1.13.0"), ("openai-decisions", "gpt-6-luna")):
        judge = DecisionJudge(wire, model, api_key="k")
        plan = plan_for(judge)
        state = decision_state(plan.constitution, artifacts(1)[0])
        asked = [
            asked_question(q, k, state) for q in plan.questions for k in range(len(q.wordings) + 1)
        ]
        body = judge.client.wire.build(model, state, asked)
        first, *questions = judge.client.wire.billed(body)
        options = "criteria" if wire == "typesafe" else "choices"
        sizes = {
            "state" if wire == "typesafe" else "input": len(_text(first)),
            "instructions": sum(len(_text(q["instructions"])) for q in questions),
            "options": sum(len(_text(q[options])) for q in questions),
            "question framing": sum(
                len(_text(q)) - len(_text(q["instructions"])) - len(_text(q[options]))
                for q in questions
            ),
        }
        if isinstance(first, dict):
            sizes.update({f"  state.{key}": len(_text(value)) for key, value in first.items()})
        # the wires publish no tokenizer: GPT-4o's (o200k) on the same parts, for comparison
        o200k = sum(
            litellm.token_counter(model="gpt-4o", text=_text(p)) for p in (first, *questions)
        )
        print(
            f"  {judge.name}: {len(asked)} questions, body {len(compact(body))} characters, "
            f"estimate {judge.client.wire.tokens(body)} tokens (GPT-4o's tokenizer: {o200k})"
        )
        for part, size in sizes.items():
            print(f"    {part:<22}{size:>7}{-(-size // 4):>7}")
    print()


def _text(value: object) -> str:
    return value if isinstance(value, str) else compact(value)


def cost_table(count: int) -> None:
    items = artifacts(count)
    rows = []
    for label, judge in (
        ("jev-1.13.0", DecisionJudge("typesafe", "jev-1.13.0", api_key="k")),
        ("gpt-6-luna", DecisionJudge("openai-decisions", "gpt-6-luna", api_key="k")),
        *((model, LiteLLMJudge(model)) for model in LLMS),
    ):
        plan = plan_for(judge)
        estimate = estimate_run(plan, items)
        rows.append((label, estimate))
    first = plan_for(DecisionJudge("typesafe", "jev-1.13.0", api_key="k"))
    asked = sum(len(q.wordings) + 1 for q in first.questions)
    print(
        f"{count} artifacts, {len(first.questions)} questions, {asked} asked per decision call "
        "(every wording); the LLM path asks each question once (first asks only)"
    )
    print(f"{'judge':<22}{'requests':>10}{'input tokens':>15}{'output tok':>12}{'dollars':>12}")
    for label, estimate in rows:
        cost = "unknown" if estimate.cost is None else f"${estimate.cost:.4f}"
        print(
            f"{label:<22}{estimate.calls:>10}{estimate.prompt_tokens:>15}"
            f"{estimate.completion_tokens:>12}{cost:>12}"
        )
    for label, estimate in rows[:2]:
        for llm, other in rows[2:]:
            if estimate.cost and other.cost:
                print(f"  {label} / {llm}: {estimate.cost / other.cost:.4f} of the dollars")
    # Like for like: the LLM path asking what one decision call asks, every question in
    # every wording (a first ask and two re-asks of each cell).
    every = {(a.key, q.id): len(q.wordings) for a in items for q in first.questions}
    print(f"the LLM path asking every wording too ({asked} calls an artifact):")
    for model in LLMS:
        plan = plan_for(LiteLLMJudge(model))
        pending, cached, stopped = pending_requests(plan, items, every)
        estimate = estimate_requests(plan, pending, cached=cached, stopped=stopped)
        cost = "unknown" if estimate.cost is None else f"${estimate.cost:.4f}"
        print(
            f"{model:<22}{estimate.calls:>10}{estimate.prompt_tokens:>15}"
            f"{estimate.completion_tokens:>12}{cost:>12}"
        )
        for label, mine in rows[:2]:
            if mine.cost and estimate.cost:
                print(f"  {label} / {model}: {mine.cost / estimate.cost:.4f} of the dollars")


# The server runs in a child process, so its CPU (jevcompat hashes every option) never
# competes with the client's for the interpreter lock.
_SERVER = """
import sys, time
from http.server import ThreadingHTTPServer
from jevcompat.mock import Handler, MockConfig

class Slow(Handler):
    cfg = MockConfig(key=None)

    def do_POST(self):
        time.sleep(float(sys.argv[1]))
        super().do_POST()

server = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
server.daemon_threads = True
server.request_queue_size = 256
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def wall_time(count: int, latency: float) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(latency)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        url = f"http://127.0.0.1:{int(child.stdout.readline())}"
        judge = DecisionJudge("typesafe", "jev-1.13.0", api_base=url, timeout=30.0)
        plan = plan_for(judge)
        items = artifacts(count)
        estimate = estimate_run(plan, items)
        started = time.perf_counter()
        results = asyncio.run(score_artifacts(plan, items))
        elapsed = time.perf_counter() - started
    finally:
        child.terminate()
        child.wait()
    calls = sum(c.usage.calls for r in results for c in r.cells if c.usage is not None)
    billed = sum(c.usage.prompt_tokens for r in results for c in r.cells if c.usage is not None)
    unscored = sum(len(r.unscored) for r in results)
    ideal = calls * latency / DEFAULT_CONCURRENCY
    print(
        f"\nscored {count} artifacts with {calls} call(s) ({unscored} unscored question(s)) "
        f"against {latency:g} s latency at concurrency {DEFAULT_CONCURRENCY}: {elapsed:.1f} s, "
        f"ideal {ideal:.1f} s, ratio {elapsed / ideal:.3f}x (target <= 1.2x)"
    )
    print(
        f"input tokens: the mock billed {billed}, the estimate said {estimate.prompt_tokens} "
        f"({estimate.prompt_tokens / billed:.4f}x; never below 1), for {estimate.calls} call(s)"
    )


@dataclasses.dataclass
class _Sure:
    """A judge that answers every question the same sure way (for the baseline the check
    estimate compares with: which answers it holds does not change what a check asks)."""

    name: str = "sure"

    async def answer(self, request: object) -> Answer:
        question = request.question  # type: ignore[attr-defined]
        label = "no" if question.id == "G" else "yes"
        return Answer({label: 1.0})


def cycle_table(count: int) -> None:
    """What each command asks of each judge: ``canon score`` (first asks), ``canon accept``
    (every answer gets a second look, so a baseline answer is never one draw) and ``canon
    check`` of a fresh agent run (every text reworded: each changed artifact's gate gets a
    second look), from the estimate (the requests the run would send, before re-asks a
    failure needs); and accept + check, one cycle of the workflow."""
    items = artifacts(count)
    accepted = asyncio.run(score_run(plan_for(_Sure()), items, record=True))
    baseline = baseline_from_run(plan_for(_Sure()), accepted)
    fresh = [dataclasses.replace(a, text=f"{a.text} (reworded)") for a in items]
    print(f"\n{count} artifacts, per command (requests / dollars):")
    print(f"{'judge':<22}{'score':>20}{'accept':>20}{'check':>20}{'accept+check':>16}")
    rows: dict[str, list[float]] = {}
    for label, judge in (
        ("jev-1.13.0", DecisionJudge("typesafe", "jev-1.13.0", api_key="k")),
        ("gpt-6-luna", DecisionJudge("openai-decisions", "gpt-6-luna", api_key="k")),
        *((model, LiteLLMJudge(model)) for model in LLMS),
    ):
        plan = plan_for(judge)
        runs = (
            estimate_run(plan, items),
            estimate_run(plan, items, record=True),
            estimate_run(plan, fresh, baseline=baseline),
        )
        cells = [f"{e.calls} / ${e.cost or 0:.3f}" for e in runs]
        cycle = (runs[1].cost or 0) + (runs[2].cost or 0)
        rows[label] = [run.cost or 0 for run in runs] + [cycle]
        print(
            f"{label:<22}{cells[0]:>20}{cells[1]:>20}{cells[2]:>20}{'$' + format(cycle, '.3f'):>16}"
        )
    print("the decision path's dollars over the LLM path's, per command (target <= 0.1):")
    print(f"  {'':<36}" + "".join(f"{c:>14}" for c in ("score", "accept", "check", "accept+check")))
    for label in ("jev-1.13.0", "gpt-6-luna"):
        for llm in LLMS:
            ratios = [mine / theirs for mine, theirs in zip(rows[label], rows[llm], strict=True)]
            print(f"  {label + ' / ' + llm:<36}" + "".join(f"{r:>14.4f}" for r in ratios))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifacts", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.4)
    parser.add_argument("--no-wall", action="store_true", help="the cost table only")
    options = parser.parse_args()
    call_parts()
    cost_table(options.artifacts)
    cycle_table(options.artifacts)
    if not options.no_wall:
        wall_time(options.artifacts, options.latency)


if __name__ == "__main__":
    main()
