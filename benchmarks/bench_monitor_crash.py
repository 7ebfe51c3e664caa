"""Soak: the directory and CloudWatch monitors under repeated kill -9, 300 traces each.

A producer writes the traces (files, some in two halves with a pause; session exports of
one, two or five runs; or spans on a moto server on 127.0.0.1, some delivered one put late
and stamped seconds early) while
``python -m canon.cli contract monitor`` runs as a real process; it is killed with SIGKILL
each time the records reach one of ``--kills`` seeded thresholds (plus a seeded jitter),
restarted at once, and stopped with Ctrl-C when every trace has a record. Reports records,
duplicates, losses, false FAILs, printed alerts and journaled alerts.

    .venv/bin/python benchmarks/bench_monitor_crash.py [--traces 300] [--kills 5] [--seed 7]
        [--monitor directory|sessions|cloudwatch|both] [--keep]

``sessions`` is the directory monitor on files of several runs (the real Monocle five-run
and Vercel two-run recordings, and a single-run trace); ``both`` is directory and cloudwatch.

Its working directories are deleted afterwards unless ``--keep`` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ABC = ROOT / "tests" / "corpus" / "traces" / "abc-examples"
REAL = ROOT / "tests" / "corpus" / "real-traces"
SESSIONS = {
    "five": REAL / "monocle" / "test_anthropic_finish_reason_integration.json",
    "two": REAL / "openinference" / "vercel_v6_generateText.json",
    "one": ABC / "valid_claim.json",
}
GREETING = """
name: greets-with-a-tool
version: "1"
constraints:
  - type: must_include_steps
    steps: [greeting_tool]
    when: {input_matches: "hello|story|weather|haiku"}
"""
CONTRACT = """
name: needs-lookup
version: "1"
constraints:
  - type: must_include_steps
    steps: ["invoke_agent a", lookup]
"""


JOURNAL = ".canon-monitor-alerts.jsonl"


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("*.json")) if p.name[0] != "."]


def _count(out: Path) -> int:
    return sum(1 for p in out.glob("*.json") if p.name[0] != ".")


def _start(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with open(log, "ab") as stream:
        return subprocess.Popen(
            [sys.executable, "-m", "canon.cli", *args],
            stdout=stream,
            stderr=subprocess.STDOUT,
            env={**os.environ, **env},
        )


def _soak(
    args: list[str],
    out: Path,
    total: int,
    producer: subprocess.Popen[bytes],
    rng: random.Random,
    kills: int,
    env: dict[str, str],
    log: Path,
) -> dict[str, Any]:
    """Run, kill at each threshold, restart; stop once every trace has a record."""
    thresholds = sorted(rng.sample(range(1, total), kills))
    started = time.monotonic()
    monitor = _start(args, log, env)
    for threshold in thresholds:
        deadline = time.monotonic() + 300
        while _count(out) < threshold and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(rng.uniform(0.0, 0.02))
        monitor.send_signal(signal.SIGKILL)
        monitor.wait()
        monitor = _start(args, log, env)
    producer.wait(300)
    deadline = time.monotonic() + 300
    while _count(out) < total and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(3.0)  # room for a late duplicate
    monitor.send_signal(signal.SIGINT)
    monitor.wait(60)
    return {"seconds": round(time.monotonic() - started, 1), "kills": len(thresholds)}


def _repeats(counts: Counter[str]) -> int:
    return sum(n - 1 for n in counts.values() if n > 1)


def _report(
    name: str,
    records: list[dict[str, Any]],
    expected: dict[str, str],
    key: Any,
    out: Path,
    log: Path,
    runs: bool = False,
) -> None:
    """Records, repeats and losses; with ``runs``, a run is its file and its trace id."""
    seen = Counter(key(record) for record in records)
    statuses = {key(record): record["verdict"]["status"] for record in records}
    failing = {trace for trace, status in expected.items() if status == "fail"}
    printed = Counter(
        f"{line.split()[1]}#{line.split()[2].strip('[]')}" if runs else line.split()[1]
        for line in log.read_text().splitlines()
        if line.startswith("FAIL ")
    )
    entries = [json.loads(line) for line in (out / JOURNAL).read_text().splitlines()]
    journal = Counter(
        f"{entry['trace']}#{entry['alerted'].rsplit('#', 1)[1]}" if runs else entry["trace"]
        for entry in entries
    )
    false_fail = sum(1 for t, s in statuses.items() if s == "fail" and expected.get(t) == "pass")
    print(
        f"{name}: {len(records)} records for {len(expected)} traces; "
        f"duplicates {_repeats(seen)}, "
        f"lost {len(set(expected) - set(seen))}, false FAILs {false_fail}, "
        f"errors {sum(1 for s in statuses.values() if s == 'error')}; alerts printed "
        f"{sum(printed.values())} (repeats {_repeats(printed)}), "
        f"journaled {sum(journal.values())} (repeats {_repeats(journal)}) "
        f"for {len(failing)} failing traces"
    )


def bench_directory(total: int, kills: int, seed: int, keep: bool) -> None:
    rng = random.Random(seed)
    work = Path(tempfile.mkdtemp(prefix="canon-soak-dir-"))
    watch, out, log = work / "in", work / "out", work / "monitor.log"
    watch.mkdir()
    plan = [(f"t{i:04d}.json", rng.random() < 0.4, rng.random() < 0.3) for i in range(total)]
    spec = work / "plan.json"
    spec.write_text(json.dumps(plan))
    code = (
        "import json,sys,time,random\n"
        f"plan=json.load(open({str(spec)!r})); rng=random.Random({seed})\n"
        f"valid=open({str(ABC / 'valid_claim.json')!r},'rb').read()\n"
        f"invalid=open({str(ABC / 'invalid_claim.json')!r},'rb').read()\n"
        "for name, bad, halves in plan:\n"
        "    data = invalid if bad else valid\n"
        f"    with open({str(watch)!r} + '/' + name, 'wb') as s:\n"
        "        if halves:\n"
        "            s.write(data[:len(data)//2]); s.flush(); time.sleep(rng.uniform(0, 0.1))\n"
        "            s.write(data[len(data)//2:])\n"
        "        else:\n"
        "            s.write(data)\n"
        "    time.sleep(rng.uniform(0, 0.01))\n"
    )
    producer = subprocess.Popen([sys.executable, "-c", code])
    args = [
        *("contract", "monitor", str(watch), "--contract", "claims-processing-v1"),
        *("--output-dir", str(out), "--poll-interval", "0.05", "--settle", "1"),
    ]
    timing = _soak(args, out, total, producer, rng, kills, {}, log)
    expected = {str(watch / name): "fail" if bad else "pass" for name, bad, _ in plan}
    print(f"directory: {timing['kills']} kills, {timing['seconds']} s, workdir {work}")
    _report("directory", _records(out), expected, lambda r: r["trace"], out, log)
    if not keep:
        shutil.rmtree(work)


def bench_sessions(files: int, kills: int, seed: int, keep: bool) -> None:
    from canon.gates.contracts import load_contract, validate
    from canon.project.contract_files import read_trace_runs

    rng = random.Random(seed)
    work = Path(tempfile.mkdtemp(prefix="canon-soak-sessions-"))
    watch, out, log, contract = work / "in", work / "out", work / "monitor.log", work / "c.yaml"
    watch.mkdir()
    contract.write_text(GREETING)
    greeting = load_contract(GREETING)
    verdicts = {
        kind: [(run.execution_id, validate(greeting, run).status) for run in read_trace_runs(path)]
        for kind, path in SESSIONS.items()
    }
    plan = [
        (f"s{i:04d}.json", rng.choice(sorted(SESSIONS)), rng.random() < 0.3) for i in range(files)
    ]
    expected = {
        f"{watch / name}#{trace_id}": status
        for name, kind, _ in plan
        for trace_id, status in verdicts[kind]
    }
    spec = work / "plan.json"
    spec.write_text(
        json.dumps([[name, str(SESSIONS[kind]), halves] for name, kind, halves in plan])
    )
    code = (
        "import json,time,random\n"
        f"plan=json.load(open({str(spec)!r})); rng=random.Random({seed})\n"
        "for name, source, halves in plan:\n"
        "    data = open(source, 'rb').read()\n"
        f"    with open({str(watch)!r} + '/' + name, 'wb') as s:\n"
        "        if halves:\n"
        "            s.write(data[:len(data)//2]); s.flush(); time.sleep(rng.uniform(0, 0.1))\n"
        "            s.write(data[len(data)//2:])\n"
        "        else:\n"
        "            s.write(data)\n"
        "    time.sleep(rng.uniform(0, 0.01))\n"
    )
    producer = subprocess.Popen([sys.executable, "-c", code])
    args = [
        *("contract", "monitor", str(watch), "--contract", str(contract)),
        *("--output-dir", str(out), "--poll-interval", "0.05", "--settle", "1"),
    ]
    timing = _soak(args, out, len(expected), producer, rng, kills, {}, log)
    print(
        f"sessions: {files} files holding {len(expected)} runs, {timing['kills']} kills, "
        f"{timing['seconds']} s, workdir {work}"
    )
    key = lambda record: f"{record['trace']}#{record['trace_id']}"  # noqa: E731
    _report("sessions", _records(out), expected, key, out, log, runs=True)
    if not keep:
        shutil.rmtree(work)


def _moto() -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.1)
    env = {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    return server, env


def _span(trace: str, span: str, parent: str, name: str, **attrs: Any) -> dict[str, Any]:
    start = 1_780_000_000_000_000_000 + int(span, 16) * 1_000_000
    return {
        "traceId": trace,
        "spanId": span,
        "parentSpanId": parent,
        "name": name,
        "startTimeUnixNano": start,
        "endTimeUnixNano": start + 500_000,
        "attributes": attrs,
        "scope": {"name": "strands.telemetry"},
        "status": {"code": "OK"},
    }


def bench_cloudwatch(total: int, kills: int, seed: int, keep: bool) -> None:
    rng = random.Random(seed)
    work = Path(tempfile.mkdtemp(prefix="canon-soak-cw-"))
    out, log, contract = work / "out", work / "monitor.log", work / "contract.yaml"
    contract.write_text(CONTRACT)
    server, env = _moto()
    try:
        os.environ.update(env)
        import boto3  # type: ignore[import-untyped]

        logs = boto3.client("logs", region_name="us-east-1")
        logs.create_log_group(logGroupName="soak")
        logs.create_log_stream(logGroupName="soak", logStreamName="default")
        base = int(time.time() * 1000) - 120_000
        puts: list[list[tuple[int, dict[str, Any]]]] = []
        held: list[tuple[int, dict[str, Any]]] = []
        expected: dict[str, str] = {}
        for index in range(total):
            trace = f"{seed + 1:08x}{index + 1:024x}"
            bad = rng.random() < 0.4
            tool = "guess" if bad else "lookup"
            root = _span(
                trace, "01", "", "invoke_agent a", **{"gen_ai.operation.name": "invoke_agent"}
            )
            call = _span(
                trace,
                "02",
                "01",
                f"execute_tool {tool}",
                **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool},
            )
            way = rng.choice(["together", "late tool", "late root"])
            stamp = index * 10
            if way == "together":
                now, late = [(stamp, root), (stamp + 1, call)], []
            elif way == "late tool":
                now, late = [(stamp + 1, root)], [(stamp - 5_000, call)]
            else:
                now, late = [(stamp + 1, call)], [(stamp - 5_000, root)]
            puts.append(sorted(held + now, key=lambda item: item[0]))
            held = late
            expected[trace] = "fail" if bad else "pass"
        puts.append(held)
        spec = work / "puts.json"
        spec.write_text(
            json.dumps([[[base + at, json.dumps(s)] for at, s in put] for put in puts if put])
        )
        code = (
            "import json,time,random,boto3\n"
            f"puts=json.load(open({str(spec)!r})); rng=random.Random({seed})\n"
            "c=boto3.client('logs',region_name='us-east-1')\n"
            "for put in puts:\n"
            "    c.put_log_events(logGroupName='soak',logStreamName='default',"
            "logEvents=[{'timestamp':t,'message':m} for t,m in put])\n"
            "    time.sleep(rng.uniform(0,0.01))\n"
        )
        producer = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, **env})
        args = [
            *("contract", "monitor", "--cloudwatch-log-group", "soak", "--region", "us-east-1"),
            *("--contract", str(contract), "--output-dir", str(out)),
            *("--poll-interval", "0.2", "--settle", "2", "--look-back", "120"),
        ]
        timing = _soak(args, out, total, producer, rng, kills, env, log)
        print(f"cloudwatch: {timing['kills']} kills, {timing['seconds']} s, workdir {work}")
        records = _records(out)
        key = lambda record: record["verdict"]["execution_id"]  # noqa: E731
        prefix = "cloudwatch:soak/"
        for record in records:
            record["trace"] = record["trace"].removeprefix(prefix)
        # printed alerts and the journal name the trace by its source: compare by trace id
        text = log.read_text().replace(prefix, "")
        log.write_text(text)
        journal = out / ".canon-monitor-alerts.jsonl"
        journal.write_text(journal.read_text().replace(prefix, ""))
        _report("cloudwatch", records, expected, key, out, log)
    finally:
        server.terminate()
        server.wait(10)
        if not keep:
            shutil.rmtree(work)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=300)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--monitor", choices=["directory", "sessions", "cloudwatch", "both"], default="both"
    )
    parser.add_argument("--keep", action="store_true", help="keep the working directories")
    options = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    if options.monitor in ("directory", "both"):
        bench_directory(options.traces, options.kills, options.seed, options.keep)
    if options.monitor == "sessions":
        bench_sessions(options.traces, options.kills, options.seed, options.keep)
    if options.monitor in ("cloudwatch", "both"):
        bench_cloudwatch(options.traces, options.kills, options.seed, options.keep)


if __name__ == "__main__":
    main()
