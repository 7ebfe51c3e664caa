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
SETTLE = 0.6  # well beyond any pause inside a file's writing: a busy machine adds delay
POLL = 0.02
ABC = Path(__file__).resolve().parents[2] / "corpus" / "traces" / "abc-examples"


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]


def _count(out: Path) -> int:
    return len(list(out.glob("*.json")))


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


BATCHES = [list(range(start, start + 5)) for start in range(0, 20, 5)]  # 20 seeds in all


def _trial(how: str, seed: int, root: Path, kit: Any) -> Any:
    """One seeded trial: produce, kill -9 at a seeded moment, restart, check."""
    rng = random.Random(seed)
    plan = [
        {
            "name": f"t{index:02d}.json",
            "invalid": rng.random() < 0.4,
            "halves": rng.random() < 0.4,
            "pause": rng.uniform(0.0, 0.05),
            "gap": rng.uniform(0.0, 0.03),
        }
        for index in range(TRACES)
    ]
    kill_after, jitter = rng.randint(0, TRACES - 1), rng.uniform(0.0, 0.01)
    watch, out = root / "in", root / "out"
    watch.mkdir(parents=True)
    args = [
        *("contract", "monitor", str(watch), "--contract", "claims-processing-v1"),
        *("--output-dir", str(out), "--poll-interval", str(POLL), "--settle", str(SETTLE)),
    ]
    start = kit.cli if how == "fork" else kit.spawn
    producer = kit.fork(lambda: _produce(watch, plan), root / "producer.log")
    first = start(args, root / "first.log")
    yield lambda: _count(out) >= kill_after
    yield jitter
    first.kill()
    second = start(args, root / "second.log")
    try:
        yield lambda: not producer.alive()
        yield lambda: _count(out) >= TRACES
        yield lambda: "canon contract monitor: watching" in second.output()
        # a duplicate would come a settle window after the restart read everything again
        yield SETTLE + 4 * POLL
    finally:
        code = second.stop()
    assert producer.code == 0, producer.output()
    assert code == 0, second.output()
    records = _records(out)
    by_file = Counter(Path(record["trace"]).name for record in records)
    assert by_file == Counter(item["name"] for item in plan)  # each file once: no loss, no repeat
    assert len({record["monitor_key"] for record in records}) == TRACES
    expected = {item["name"]: "fail" if item["invalid"] else "pass" for item in plan}
    assert {Path(r["trace"]).name: r["verdict"]["status"] for r in records} == expected
    printed = first.output() + second.output()
    alerts = Counter(line.split()[1] for line in printed.splitlines() if line.startswith("FAIL "))
    failing = [str(watch / name) for name, status in expected.items() if status == "fail"]
    journal = (out / ".canon-monitor-alerts.jsonl").read_text().splitlines()
    assert Counter(json.loads(line)["trace"] for line in journal) == Counter(failing)  # once each
    # printed: none lost; the one kill may repeat the alert it cut off from its mark
    assert set(alerts) == set(failing) and sum(alerts.values()) <= len(failing) + 1


@pytest.mark.parametrize("seeds", BATCHES, ids=lambda seeds: f"seeds{seeds[0]}-{seeds[-1]}")
def test_a_kill_and_restart_neither_repeats_nor_skips(
    seeds: list[int], tmp_path: Path, kill_kit: Any
) -> None:
    kill_kit.together({f"seed {s}": _trial("fork", s, tmp_path / str(s), kill_kit) for s in seeds})


def test_a_kill_of_python_m_canon_neither_repeats_nor_skips(tmp_path: Path, kill_kit: Any) -> None:
    kill_kit.together({"seed 100": _trial("process", 100, tmp_path, kill_kit)})
