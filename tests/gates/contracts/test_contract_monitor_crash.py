"""kill -9 trials for the directory monitor: no trace validated twice, none skipped, alerts once.

Each trial is seeded: a producer writes eight traces (some in two halves with a pause, as
a slow exporter does), the monitor is killed with SIGKILL at a seeded moment (after a
seeded number of records, plus a seeded jitter), restarted, and stopped with Ctrl-C once
every trace has a record. The trials run the real command in forked processes; one runs
it as a fresh ``python -m canon.cli`` interpreter.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

TRACES = 8
SETTLE = 0.15  # longer than any pause inside a file's writing below
POLL = 0.02
ABC = Path(__file__).resolve().parents[2] / "corpus" / "traces" / "abc-examples"


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]


def _wait_for(predicate: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.002)
    return False


def _produce(watch: Path, plan: list[dict[str, Any]]) -> None:
    valid = (ABC / "valid_claim.json").read_bytes()
    invalid = (ABC / "invalid_claim.json").read_bytes()
    for item in plan:
        time.sleep(item["gap"])
        data = invalid if item["invalid"] else valid
        with open(watch / item["name"], "wb") as stream:
            if item["halves"]:
                stream.write(data[: len(data) // 2])
                stream.flush()
                time.sleep(item["pause"])  # half a trace sits there, well inside the window
            stream.write(data[len(data) // 2 :] if item["halves"] else data)


def _trials() -> list[Any]:
    trials = [pytest.param("fork", seed, id=f"seed{seed}") for seed in range(20)]
    return [*trials, pytest.param("process", 100, id="python-m-canon-seed100")]


@pytest.mark.parametrize(("how", "seed"), _trials())
def test_a_kill_and_restart_neither_repeats_nor_skips(
    how: str, seed: int, tmp_path: Path, kill_kit: Any
) -> None:
    rng = random.Random(seed)
    plan = [
        {
            "name": f"t{index:02d}.json",
            "invalid": rng.random() < 0.4,
            "halves": rng.random() < 0.4,
            "pause": rng.uniform(0.0, SETTLE / 3),
            "gap": rng.uniform(0.0, 0.03),
        }
        for index in range(TRACES)
    ]
    kill_after, jitter = rng.randint(0, TRACES - 1), rng.uniform(0.0, 0.01)
    watch, out = tmp_path / "in", tmp_path / "out"
    watch.mkdir()
    args = [
        *("contract", "monitor", str(watch), "--contract", "claims-processing-v1"),
        *("--output-dir", str(out), "--poll-interval", str(POLL), "--settle", str(SETTLE)),
    ]
    start = kill_kit.cli if how == "fork" else kill_kit.spawn
    producer = kill_kit.fork(lambda: _produce(watch, plan), tmp_path / "producer.log")
    first = start(args, tmp_path / "first.log")
    _wait_for(lambda: len(list(out.glob("*.json"))) >= kill_after, 20)
    time.sleep(jitter)
    first.kill()
    second = start(args, tmp_path / "second.log")
    try:
        assert producer.wait(30) == 0, producer.output()
        everything = _wait_for(lambda: len(list(out.glob("*.json"))) >= TRACES, 30)
        assert everything, second.output()
        time.sleep(SETTLE + 3 * POLL)  # room for a duplicate to appear, if one were coming
    finally:
        code = second.stop()
    assert code == 0, second.output()
    records = _records(out)
    by_file = Counter(Path(record["trace"]).name for record in records)
    assert by_file == Counter(item["name"] for item in plan)  # each file once: no loss, no repeat
    assert len({record["monitor_key"] for record in records}) == TRACES
    expected = {item["name"]: "fail" if item["invalid"] else "pass" for item in plan}
    assert {Path(r["trace"]).name: r["verdict"]["status"] for r in records} == expected
    printed = first.output() + second.output()
    alerts = Counter(line.split()[1] for line in printed.splitlines() if line.startswith("FAIL "))
    assert alerts == Counter(
        str(watch / name) for name, status in expected.items() if status == "fail"
    )
