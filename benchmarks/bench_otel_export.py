"""What --otel costs: mapping a run's results to events, and sending them over OTLP/HTTP.

Scores N artifacts (default 1,000; the example constitution's 10 questions each) with a
scripted judge, half of them linked to a trace, maps the results to
``gen_ai.evaluation.result`` events and sends them to the tests' OTLP/HTTP receiver on
127.0.0.1. Prints the median of 5 rounds for each phase, the events per second sent, and
checks that every event arrived (a lost event fails the benchmark).
Run: .venv/bin/python benchmarks/bench_otel_export.py [artifacts]
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from canon.check.runner import ScoringPlan, score_artifacts
from canon.core.artifact import Artifact
from canon.judge.mock import MockJudge
from canon.project.store import constitution_from_file, load_rubric
from canon.report.otel_events import TraceLink, evaluation_events
from canon.report.otel_export import send_events

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
ROUNDS = 5


def _receiver() -> Any:
    path = ROOT / "tests" / "report" / "otlp_receiver.py"
    spec = importlib.util.spec_from_file_location("bench_otlp_receiver", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    """Score, map and send; print the medians."""
    constitution = constitution_from_file(ROOT / "examples" / "constitution.yaml")
    judge = MockJudge({"contradict": "no", "tradeoff": "n/a", "__default__": "yes"})
    plan = ScoringPlan(constitution, load_rubric(), judge, 0.85)
    artifacts = [Artifact(f"reply {i}", id=f"a{i}") for i in range(ARTIFACTS)]
    results = asyncio.run(score_artifacts(plan, artifacts))
    links = {f"a{i}": TraceLink(f"{i + 1:032x}", f"{i + 1:016x}") for i in range(0, ARTIFACTS, 2)}
    mapping: list[float] = []
    sending: list[float] = []
    with _receiver().running_receiver() as receiver:
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
        for _ in range(ROUNDS):
            receiver.records.clear()
            started = time.perf_counter()
            events = evaluation_events(results, plan, links=links, suite="bench")
            mapping.append(time.perf_counter() - started)
            started = time.perf_counter()
            summary = send_events(events, version="bench")
            sending.append(time.perf_counter() - started)
            if not summary.complete or len(receiver.records) != len(events):
                raise SystemExit(f"lost events: {summary}, {len(receiver.records)} arrived")
    count = len(events)
    send = statistics.median(sending)
    print(f"artifacts: {ARTIFACTS}, events per run: {count}, rounds: {ROUNDS}")
    print(f"map results to events: median {statistics.median(mapping) * 1000:.1f} ms")
    print(f"send over OTLP/HTTP and shut down: median {send * 1000:.1f} ms")
    print(f"events per second sent: {count / send:,.0f}; all {count} arrived every round")


if __name__ == "__main__":
    main()
