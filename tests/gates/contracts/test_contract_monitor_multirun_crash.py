"""kill -9 trials for the directory monitor on files of several runs: no run twice, none lost.

A watched directory holds the real five-run (Monocle) and two-run (Vercel) recordings and
a single-run trace, under seeded names so the order they are read in varies. In each
seeded trial the monitor, the real command in a forked process, SIGKILLs itself right
after its N-th audit record (N seeded), which in most trials is between two runs of one
file; it is restarted and stopped with Ctrl-C once every run has a record. One more trial
kills a fresh ``python -m canon.cli`` at a seeded moment while a producer writes the files.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
REAL = ROOT / "tests" / "corpus" / "real-traces"
FILES = {
    "five": (REAL / "monocle" / "test_anthropic_finish_reason_integration.json", 5),
    "two": (REAL / "openinference" / "vercel_v6_generateText.json", 2),
    "one": (ROOT / "tests" / "corpus" / "traces" / "abc-examples" / "valid_claim.json", 1),
}
RUNS = sum(runs for _, runs in FILES.values())
SETTLE = 0.6  # as in the single-run trials: a busy machine adds delay to every step
POLL = 0.02
CONTRACT = """\
name: greets-with-a-tool
version: "1"
constraints:
  - type: must_include_steps
    steps: [greeting_tool]
    when: {input_matches: "hello|story|weather|haiku"}
"""
# what each run's verdict is (from test_contract_monitor_multirun.py): four of them fail
FAILING = {
    "faa65a4b6fdeabb83e02f48c72ebf343",
    "9b0481621bea764dcebd0dda971e6ba7",
    "88bbd9f74bbd6e92f4529d0ad7812cec",
    "700d5f98fe2420adcf6ab0822f7a323c",
}


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]


def _count(out: Path) -> int:
    return len(list(out.glob("*.json")))


def _names(rng: random.Random) -> dict[str, str]:
    """Seeded file names, so the order the monitor reads the files in differs by trial."""
    order = list(FILES)
    rng.shuffle(order)
    return {kind: f"{position}-{kind}.json" for position, kind in enumerate(order)}


def _killed_after(records: int, work: Callable[[], object]) -> Callable[[], None]:
    """``work`` in a process that SIGKILLs itself right after its ``records``-th record."""

    def run() -> None:
        from canon.monitor.ledger import Ledger

        written = 0
        finish = Ledger.finish

        def finish_then_die(self: Ledger, *args: Any, **kwargs: Any) -> None:
            nonlocal written
            finish(self, *args, **kwargs)
            written += 1
            if written == records:
                os.kill(os.getpid(), signal.SIGKILL)

        Ledger.finish = finish_then_die  # type: ignore[method-assign]  # this child only
        work()

    return run


def _check(watch: Path, out: Path, names: dict[str, str], printed: str) -> None:
    records = _records(out)
    runs = Counter((Path(r["trace"]).name, r["trace_id"]) for r in records)
    assert sorted(Counter(name for name, _ in runs).items()) == sorted(
        (names[kind], count) for kind, (_, count) in FILES.items()
    )
    assert set(runs.values()) == {1}, runs  # each run once: no repeat
    assert len({r["monitor_key"] for r in records}) == RUNS
    statuses = {r["trace_id"]: r["verdict"]["status"] for r in records}
    assert {t for t, status in statuses.items() if status == "fail"} == FAILING
    assert set(statuses.values()) == {"pass", "fail"}
    journal = [json.loads(line) for line in (out / ".canon-monitor-alerts.jsonl").open()]
    alerted = Counter(entry["alerted"].rsplit("#", 1)[1] for entry in journal)
    assert alerted == Counter(FAILING)  # each failing run journaled exactly once
    alerts = Counter(
        line.split()[2].strip("[]") for line in printed.splitlines() if line.startswith("FAIL ")
    )
    # printed: none lost; the one kill may repeat the alert it cut off from its mark
    assert set(alerts) == FAILING and sum(alerts.values()) <= len(FAILING) + 1


def _restart(kit: Any, args: list[str], root: Path, out: Path) -> Any:
    """Restart the monitor, wait for every run's record, Ctrl-C it; yields what it waits for."""
    second = kit.cli(args, root / "second.log")
    try:
        yield lambda: _count(out) >= RUNS
        yield lambda: "canon contract monitor: watching" in second.output()
        yield SETTLE + 4 * POLL  # a repeat would come a settle window after the restart
    finally:
        code = second.stop()
    assert code == 0, second.output()
    return second


def _args(root: Path, watch: Path, out: Path) -> list[str]:
    contract = root / "contract.yaml"
    contract.write_text(CONTRACT)
    return [
        *("contract", "monitor", str(watch), "--contract", str(contract)),
        *("--output-dir", str(out), "--poll-interval", str(POLL), "--settle", str(SETTLE)),
    ]


def _exact_trial(seed: int, root: Path, kit: Any) -> Any:
    """Kill -9 right after a seeded number of records; every file was there from the start."""
    rng = random.Random(seed)
    names = _names(rng)
    kill_after = rng.randint(1, RUNS - 1)
    watch, out = root / "in", root / "out"
    watch.mkdir(parents=True)
    for kind, (source, _) in FILES.items():
        shutil.copy(source, watch / names[kind])
    old = time.time() - 10 * SETTLE  # settled at once: the kill point is all that varies
    for path in watch.iterdir():
        os.utime(path, (old, old))
    args = _args(root, watch, out)
    from canon.cli import main

    first = kit.fork(
        _killed_after(kill_after, lambda: main.main(args=args, prog_name="canon")),
        root / "first.log",
    )
    yield lambda: not first.alive()
    assert first.code == -signal.SIGKILL, first.output()
    assert _count(out) == kill_after
    second = yield from _restart(kit, args, root, out)
    _check(watch, out, names, first.output() + second.output())


def _produce(watch: Path, names: dict[str, str], gaps: list[float], pause: float) -> None:
    for (kind, (source, _)), gap in zip(FILES.items(), gaps, strict=True):
        time.sleep(gap)
        data = source.read_bytes()
        with open(watch / names[kind], "wb") as stream:
            stream.write(data[: len(data) // 2])
            stream.flush()
            time.sleep(pause)  # half a session export sits there, well inside the window
            stream.write(data[len(data) // 2 :])


def _timed_trial(seed: int, root: Path, kit: Any) -> Any:
    """A fresh interpreter killed at a seeded moment while a producer writes the files."""
    rng = random.Random(seed)
    names = _names(rng)
    gaps = [rng.uniform(0.0, 0.03) for _ in FILES]
    pause = rng.uniform(0.0, 0.05)
    kill_after, jitter = rng.randint(0, RUNS - 1), rng.uniform(0.0, 0.01)
    watch, out = root / "in", root / "out"
    watch.mkdir(parents=True)
    args = _args(root, watch, out)
    producer = kit.fork(lambda: _produce(watch, names, gaps, pause), root / "producer.log")
    first = kit.spawn(args, root / "first.log")
    yield lambda: _count(out) >= kill_after
    yield jitter
    first.kill()
    yield lambda: not producer.alive()
    assert producer.code == 0, producer.output()
    second = yield from _restart(kit, args, root, out)
    _check(watch, out, names, first.output() + second.output())


SEEDS = list(range(20))
BATCHES = [SEEDS[start : start + 5] for start in range(0, 20, 5)]


def test_most_seeded_kills_land_between_two_runs_of_one_file() -> None:
    """The trials below test what they claim: their kill points fall inside a file."""
    inside = 0
    for seed in SEEDS:
        rng = random.Random(seed)
        names = _names(rng)
        kill_after = rng.randint(1, RUNS - 1)
        ends, total = set(), 0
        for kind in sorted(FILES, key=names.__getitem__):
            total += FILES[kind][1]
            ends.add(total)
        inside += kill_after not in ends
    assert inside == 12  # of 20; the rest land between two files


@pytest.mark.parametrize("seeds", BATCHES, ids=lambda seeds: f"seeds{seeds[0]}-{seeds[-1]}")
def test_a_kill_between_two_runs_of_a_file_neither_repeats_nor_loses_a_run(
    seeds: list[int], tmp_path: Path, kill_kit: Any
) -> None:
    kill_kit.together({f"seed {s}": _exact_trial(s, tmp_path / str(s), kill_kit) for s in seeds})


def test_a_kill_of_python_m_canon_on_session_exports_neither_repeats_nor_loses(
    tmp_path: Path, kill_kit: Any
) -> None:
    kill_kit.together({"seed 100": _timed_trial(100, tmp_path, kill_kit)})
