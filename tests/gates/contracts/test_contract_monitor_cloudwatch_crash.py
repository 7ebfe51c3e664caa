"""kill -9 trials for the CloudWatch monitor on moto: every trace once, late spans included.

Each trial is seeded: a producer puts eight traces into a fresh log group, some with a span
delivered late and stamped before the spans already there (a root span is stamped with its
start but exported last; a batch is retried), the monitor is killed with SIGKILL at a
seeded moment, restarted, and stopped with Ctrl-C once every trace has a record. The
trials run the real command in forked processes; one runs ``python -m canon.cli``.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("boto3")

TRACES = 8
SETTLE = 0.3  # longer than any late delivery below plus a poll
POLL = 0.05
CONTRACT = """
name: needs-lookup
version: "1"
constraints:
  - type: must_include_steps
    steps: [lookup]
"""


def _span(trace: str, span: str, parent: str | None, name: str, **attrs: Any) -> dict[str, Any]:
    start = 1_780_000_000_000_000_000 + int(span, 16) * 1_000_000
    return {
        "traceId": trace,
        "spanId": span,
        "parentSpanId": parent or "",
        "name": name,
        "startTimeUnixNano": start,
        "endTimeUnixNano": start + 500_000,
        "attributes": attrs,
        "scope": {"name": "strands.telemetry"},
        "status": {"code": "OK"},
    }


def _spans(trace: str, tool: str) -> tuple[dict[str, Any], dict[str, Any]]:
    root = _span(trace, "01", None, "invoke_agent a", **{"gen_ai.operation.name": "invoke_agent"})
    call = _span(
        trace,
        "02",
        "01",
        f"execute_tool {tool}",
        **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool},
    )
    return root, call


def _schedule(rng: random.Random, seed: int) -> tuple[list[dict[str, Any]], list[Any]]:
    """The traces, and the puts in time order: (seconds from start, stamp offset ms, span)."""
    plan, puts, moment = [], [], 0.0
    for index in range(TRACES):
        trace = f"{seed + 1:08x}{index + 1:024x}"
        invalid = rng.random() < 0.4
        root, call = _spans(trace, "guess" if invalid else "lookup")
        delivery = rng.choice(["together", "late tool", "late root"])
        moment += rng.uniform(0.0, 0.03)
        stamp = index * 10
        late = moment + rng.uniform(0.05, SETTLE - 2 * POLL)
        if delivery == "together":
            puts += [(moment, stamp, root), (moment, stamp + 1, call)]
        elif delivery == "late tool":  # delivered after the root, stamped seconds before it
            puts += [(moment, stamp + 1, root), (late, stamp - 5_000, call)]
        else:  # the root is stamped with its start, the earliest, and exported last
            puts += [(moment, stamp + 1, call), (late, stamp - 5_000, root)]
        plan.append({"trace": trace, "invalid": invalid, "delivery": delivery})
    return plan, sorted(puts, key=lambda put: put[0])


def _produce(group: str, puts: list[Any], base_ms: int) -> None:
    import boto3  # type: ignore[import-untyped]

    client = boto3.client("logs", region_name="us-east-1")
    started = time.monotonic()
    for moment, offset, span in puts:
        time.sleep(max(0.0, moment - (time.monotonic() - started)))
        client.put_log_events(
            logGroupName=group,
            logStreamName="default",
            logEvents=[{"timestamp": base_ms + offset, "message": json.dumps(span)}],
        )


def _record_paths(out: Path) -> list[Path]:
    return [p for p in sorted(out.glob("*.json")) if not p.name.startswith(".")]


def _wait_for(predicate: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.002)
    return False


def _trials() -> list[Any]:
    trials = [pytest.param("fork", seed, id=f"seed{seed}") for seed in range(20)]
    return [*trials, pytest.param("process", 100, id="python-m-canon-seed100")]


@pytest.mark.parametrize(("how", "seed"), _trials())
def test_a_kill_and_restart_neither_repeats_nor_skips_nor_misses_late_spans(
    how: str, seed: int, logs: Any, aws_env: dict[str, str], tmp_path: Path, kill_kit: Any
) -> None:
    rng = random.Random(seed)
    plan, puts = _schedule(rng, seed)
    kill_after, jitter = rng.randint(0, TRACES - 1), rng.uniform(0.0, 0.02)
    group = f"crash-{how}-{seed}"
    logs.create_log_group(logGroupName=group)
    logs.create_log_stream(logGroupName=group, logStreamName="default")
    contract, out = tmp_path / "contract.yaml", tmp_path / "out"
    contract.write_text(CONTRACT)
    args = [
        *("contract", "monitor", "--cloudwatch-log-group", group, "--region", "us-east-1"),
        *("--contract", str(contract), "--output-dir", str(out)),
        *("--poll-interval", str(POLL), "--settle", str(SETTLE), "--look-back", "60"),
    ]

    def start(log: Path) -> Any:
        if how == "fork":
            return kill_kit.cli(args, log)
        return kill_kit.spawn(args, log, env=aws_env)

    base_ms = int(time.time() * 1000) - 60_000
    producer = kill_kit.fork(lambda: _produce(group, puts, base_ms), tmp_path / "producer.log")
    first = start(tmp_path / "first.log")
    _wait_for(lambda: len(_record_paths(out)) >= kill_after, 30)
    time.sleep(jitter)
    first.kill()
    second = start(tmp_path / "second.log")
    try:
        assert producer.wait(30) == 0, producer.output()
        everything = _wait_for(lambda: len(_record_paths(out)) >= TRACES, 30)
        assert everything, second.output()
        time.sleep(SETTLE + 2 * POLL)  # room for a duplicate to appear, if one were coming
    finally:
        code = second.stop()
    assert code == 0, second.output()
    records = [json.loads(p.read_text()) for p in _record_paths(out)]
    traces = Counter(record["verdict"]["execution_id"] for record in records)
    assert traces == Counter(item["trace"] for item in plan)  # each once: no loss, no repeat
    expected = {item["trace"]: "fail" if item["invalid"] else "pass" for item in plan}
    # a trace validated without its late span would FAIL here: the late span is the tool call
    assert {r["verdict"]["execution_id"]: r["verdict"]["status"] for r in records} == expected
    printed = first.output() + second.output()
    alerts = Counter(line.split()[1] for line in printed.splitlines() if line.startswith("FAIL "))
    failing = [
        f"cloudwatch:{group}/{trace}" for trace, status in expected.items() if status == "fail"
    ]
    assert alerts == Counter(failing)
