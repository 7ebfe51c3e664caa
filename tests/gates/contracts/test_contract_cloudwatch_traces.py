"""The CloudWatch monitor on a log group holding the spans of several traces, interleaved.

A log group such as ``aws/spans`` holds every trace of every service, one span per event,
in whatever order the exporters delivered them. The spans here are real: four ADOT and
AgentCore session exports of strands-agents/evals (five traces, one of them in a file
with two), put into one group in a seeded shuffle. Each trace must get exactly the
verdict and summary that reading its own spans alone gives.
"""

from __future__ import annotations

import json
import random
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from canon.gates.contracts import load_contract, normalize_trace, validate
from canon.gates.contracts.audit import summarize_execution
from canon.monitor import monitor_cloudwatch

pytest.importorskip("boto3")

REAL = Path(__file__).resolve().parents[2] / "corpus" / "real-traces" / "strands-evals"
SESSIONS = [
    "claude_adot_spans.json",
    "openai_agents_genai_adot_spans.json",
    "openai_agents_openinference_adot_spans.json",
    "openinference_adot_spans.json",
]
CONTRACT = load_contract(
    """
name: runs-bash
version: "1"
constraints:
  - type: must_include_steps
    steps: [Bash]
"""
)


def _spans(name: str) -> list[dict[str, Any]]:
    data = json.loads((REAL / name).read_text())
    return list(data["spans"] if isinstance(data, dict) else data)


def _by_trace() -> dict[str, list[dict[str, Any]]]:
    traces: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for name in SESSIONS:
        for span in _spans(name):
            traces[span["trace_id"]].append(span)
    return dict(traces)


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("*.json")) if p.name[0] != "."]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_interleaved_spans_of_several_traces_give_one_verdict_per_trace(
    seed: int, logs: Any, tmp_path: Path
) -> None:
    group = f"mixed-{seed}"
    logs.create_log_group(logGroupName=group)
    traces = _by_trace()
    assert len(traces) == 5
    events = [span for spans in traces.values() for span in spans]
    random.Random(seed).shuffle(events)
    now = int(time.time() * 1000)
    for stream in ("a", "b"):  # two exporters, each delivering half the spans
        logs.create_log_stream(logGroupName=group, logStreamName=stream)
    halves = {"a": events[::2], "b": events[1::2]}
    for stream, spans in halves.items():
        batch = [{"timestamp": now + i, "message": json.dumps(s)} for i, s in enumerate(spans)]
        logs.put_log_events(logGroupName=group, logStreamName=stream, logEvents=batch)
    out = tmp_path / "audit"
    # some traces' root spans live in another service: complete after three quiet polls
    stats = monitor_cloudwatch(
        CONTRACT, group, output_dir=out, max_polls=5, sleep=lambda _: None, client=logs, settle=0
    )
    assert (stats.validated, stats.errors, stats.pending) == (5, 0, 0)
    records = {r["monitor_key"]: r for r in _records(out)}
    assert sorted(records) == sorted(f"cloudwatch:{group}/{trace}" for trace in traces)
    for trace_id, spans in traces.items():
        alone = normalize_trace(spans)
        record = records[f"cloudwatch:{group}/{trace_id}"]
        assert record["execution_summary"] == summarize_execution(alone)
        assert record["verdict"]["status"] == validate(CONTRACT, alone).status
    statuses = sorted(r["verdict"]["status"] for r in records.values())
    assert statuses == ["fail", "fail", "fail", "fail", "pass"]  # only Claude ran Bash


MONOCLE = Path(__file__).resolve().parents[2] / "corpus" / "real-traces" / "monocle"
GREETING = load_contract(
    """
name: greets-with-a-tool
version: "1"
constraints:
  - type: must_include_steps
    steps: [greeting_tool]
    when: {input_matches: "hello|story|weather"}
"""
)


def test_spans_in_the_sdks_own_json_are_grouped_by_the_trace_id_in_their_context(
    logs: Any, tmp_path: Path
) -> None:
    # The OTel SDK's span JSON (Monocle writes it) keeps its ids under "context" and its
    # parent in "parent_id"; these five traces were dropped silently before.
    group = "sdk-json"
    logs.create_log_group(logGroupName=group)
    logs.create_log_stream(logGroupName=group, logStreamName="default")
    spans = json.loads((MONOCLE / "test_anthropic_finish_reason_integration.json").read_text())
    now = int(time.time() * 1000)
    batch = [{"timestamp": now + i, "message": json.dumps(s)} for i, s in enumerate(spans)]
    logs.put_log_events(logGroupName=group, logStreamName="default", logEvents=batch)
    out = tmp_path / "audit"
    stats = monitor_cloudwatch(
        GREETING, group, output_dir=out, max_polls=5, sleep=lambda _: None, client=logs, settle=0
    )
    assert (stats.validated, stats.failed, stats.errors, stats.pending) == (5, 3, 0, 0)
    inputs = {
        r["execution_summary"]["input_preview"]: r["verdict"]["status"] for r in _records(out)
    }
    assert inputs == {
        "Say hello.": "fail",
        "Tell me a long story about a dragon.": "fail",
        "How do I make a dangerous substance?": "pass",
        "Write until you say END.": "pass",
        "What is the weather in Paris? This might trigger a tool.": "fail",
    }


def test_a_json_event_without_a_trace_id_is_counted_never_validated(
    logs: Any, tmp_path: Path
) -> None:
    group = "app-logs"
    logs.create_log_group(logGroupName=group)
    logs.create_log_stream(logGroupName=group, logStreamName="default")
    message = json.dumps({"level": "info", "msg": "request served"})
    logs.put_log_events(
        logGroupName=group,
        logStreamName="default",
        logEvents=[{"timestamp": int(time.time() * 1000), "message": message}],
    )
    stats = monitor_cloudwatch(
        CONTRACT, group, output_dir=tmp_path, max_polls=2, sleep=lambda _: None, client=logs
    )
    assert (stats.validated, stats.errors) == (0, 1)
