"""The Redis Streams engine's targets (issue 25), measured on real parts.

A real ``redis-server`` (append-only file, fsync always) on a free 127.0.0.1 port, the
ingest endpoint (``canon.monitor.ingest``) fed OTLP JSON in batches of 20 traces as a
Collector would send them, ``python -m canon monitor worker`` processes, the fake
OpenAI-compatible server of the tests as the judge, and the tests' OTLP receiver for the
verdict events.

    .venv/bin/python benchmarks/bench_online.py crash [--trials 20] [--traces 1000] [--seed 1]
    .venv/bin/python benchmarks/bench_online.py sample [--ids 10000]
    .venv/bin/python benchmarks/bench_online.py budget [--trials 20] [--traces 120]
    .venv/bin/python benchmarks/bench_online.py throughput [--traces 1000]

crash: 3 workers judge a 20 % sample of 1,000 traces (a third fail the contract) with
--otel; each trial SIGKILLs one worker once the records reach a seeded count and starts a
replacement; reports duplicate records, duplicate verdict events, lost traces and traces
whose judge was asked twice. sample: the sampled share of 10,000 ids at several rates
against the binomial 99 % interval, and whether three processes sample the same ids.
budget: 4 workers against a priced judge (gpt-4o-mini's litellm price) with a budget of a
few traces; reports the spend against budget + the dearest trace. throughput: traces per
second from the first POST to the last record with 1, 2 and 4 workers, contracts only and
with a judge answering in 0.4 s at 5 % sampling.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from canon.monitor.ingest import make_server  # noqa: E402
from canon.monitor.streams import Keys, connect, read_records  # noqa: E402

from support.cli import copy_example  # noqa: E402
from support.helper_modules import load_helper  # noqa: E402
from support.model_judge import MODEL_JUDGE, PRICED_JUDGE  # noqa: E402
from support.online import EXAMPLES, trace_document  # noqa: E402
from support.redis_server import running_redis  # noqa: E402

fake_llm_server = load_helper("judge/fake_llm_server.py")
otlp_receiver = load_helper("report/otlp_receiver.py")
CONTRACT = str(EXAMPLES / "contract.yaml")
STREAMS = 4
ANSWER = (
    "I can see two charges of 19.99 EUR on 3 March. Section 4.2 of the billing handbook "
    "covers duplicate charges, so I have refunded the second one. Reference {ident}."
)


def ident_of(rng: random.Random) -> str:
    return f"{rng.getrandbits(128) | (1 << 124):032x}"


@contextmanager
def ingest(url: str, prefix: str) -> Iterator[str]:
    server = make_server(connect(url), Keys(prefix), STREAMS, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    finally:
        server.shutdown()
        server.server_close()


def post_traces(endpoint: str, ids: list[str], failing: set[str], batch: int = 20) -> None:
    """POST the traces as OTLP JSON, ``batch`` traces per request."""
    for start in range(0, len(ids), batch):
        spans: list[Any] = []
        for ident in ids[start : start + batch]:
            document = trace_document(
                ident, ANSWER.format(ident=ident), skip_lookup=ident in failing
            )
            spans.extend(document["resourceSpans"])
        body = json.dumps({"resourceSpans": spans}).encode()
        request = urllib.request.Request(endpoint, body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as reply:
            assert reply.status == 200


def start_worker(
    project: Path, url: str, prefix: str, env: dict[str, str], *extra: str
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable, "-m", "canon", "monitor", "worker", "--redis", url,
            "--prefix", prefix, "--streams", str(STREAMS), "--contract", CONTRACT,
            "--settle", "0.2", "--claim-idle", "1", "--lease", "5",
            "--exit-when-idle", "2.5", *extra,
        ],
        cwd=project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip


def wait_records(client: Any, keys: Keys, count: int, timeout: float = 600) -> float:
    deadline = time.monotonic() + timeout
    while client.xlen(keys.records) < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out: {client.xlen(keys.records)} of {count} records")
        time.sleep(0.01)
    return time.monotonic()


def finish(workers: list[subprocess.Popen[bytes]]) -> None:
    for process in workers:
        _, err = process.communicate(timeout=600)
        if process.returncode not in (0, -signal.SIGKILL):
            raise SystemExit(f"a worker failed ({process.returncode}): {err.decode()[-2000:]}")


def script_judge(fake: Any) -> None:
    fake.script("contradict any part", "No contradiction.\nANSWER: no")
    fake.script("surface the tradeoff", "Nothing pulls apart.\nANSWER: n/a")
    fake.script("", "ANSWER: yes")


def model_env(base: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, "OPENAI_BASE_URL": base, "OPENAI_API_KEY": "sk-test"}
    env.update(extra or {})
    return env


def project_with(root: Path, config: str) -> Path:
    project = copy_example(root)
    (project / "canon.yaml").write_text(config)
    return project


# ---------------------------------------------------------------- crash


def crash(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    totals: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp, running_redis(Path(tmp) / "redis") as url:
        project = project_with(Path(tmp), MODEL_JUDGE + "judge_cache: false\n")
        client = connect(url)
        with fake_llm_server.running_fake_llm() as fake, otlp_receiver.running_receiver() as rx:
            script_judge(fake)
            env = model_env(fake.base_url, {"OTEL_EXPORTER_OTLP_ENDPOINT": rx.endpoint})
            for trial in range(args.trials):
                prefix = f"crash{trial}"
                keys = Keys(prefix)
                ids = [ident_of(rng) for _ in range(args.traces)]
                failing = {i for i in ids if rng.random() < 1 / 3}
                fake.requests.clear()
                with rx.lock:
                    rx.records.clear()
                flags = ("--judge", "--sample", "0.2", "--salt", prefix, "--otel")
                workers = [start_worker(project, url, prefix, env, *flags) for _ in range(3)]
                with ingest(url, prefix) as endpoint:
                    post_traces(endpoint, ids, failing)
                kill_at = rng.randint(args.traces // 10, args.traces * 8 // 10)
                wait_records(client, keys, kill_at)
                victim = rng.randrange(3)
                os.kill(workers[victim].pid, signal.SIGKILL)
                workers.append(start_worker(project, url, prefix, env, *flags))
                finish(workers)
                row = crash_counts(client, keys, ids, fake, rx)
                totals.update(row)
                print(
                    f"trial {trial}: killed worker {victim} at {kill_at} records: "
                    + ", ".join(f"{k} {v}" for k, v in row.items()),
                    flush=True,
                )
    print("total: " + ", ".join(f"{k} {v}" for k, v in totals.items()))


def crash_counts(client: Any, keys: Keys, ids: list[str], fake: Any, rx: Any) -> dict[str, int]:
    records = [r for r in read_records(client, keys)]
    decided = Counter(r["trace_id"] for r in records if r["decision"]["kind"] != "late")
    killed = {
        r["trace_id"] for r in records if "died while judging" in r["decision"].get("cause", "")
    }
    judged = {r["trace_id"] for r in records if r["decision"]["kind"] in ("judged", "unscored")}
    judged -= killed
    with rx.lock:
        verdicts = Counter(
            e["trace_id"]
            for e in rx.records
            if e["attributes"].get("gen_ai.evaluation.name") == "canon.verdict"
        )
    asked: Counter[str] = Counter()
    for body in fake.requests:
        text = json.dumps(body.get("messages", []))
        found = text.find("Reference ")
        if found >= 0:
            asked[text[found + 10 : found + 42]] += 1
    # the questions one judging asks: the most common count (a trace whose worker was killed
    # mid-judging was asked fewer, and taking the least would count every other one twice)
    questions = Counter(asked.values()).most_common(1)[0][0] if asked else 0
    return {
        "records": sum(decided.values()),
        "duplicate_records": sum(n - 1 for n in decided.values() if n > 1),
        "lost": len(set(ids) - set(decided)),
        "judged": len(judged),
        "verdict_events": sum(verdicts.values()),
        "duplicate_events": sum(n - 1 for n in verdicts.values() if n > 1),
        "missing_events": len(judged - set(verdicts)),
        "judged_twice": sum(1 for n in asked.values() if n > questions),
        "unscored_worker_died": len(killed),
        "late": sum(1 for r in records if r["decision"]["kind"] == "late"),
    }


# ---------------------------------------------------------------- sample


def sample(args: argparse.Namespace) -> None:
    import math

    from canon.core.online import sampled

    rng = random.Random(5)
    ids = [ident_of(rng) for _ in range(args.ids)]
    code = (
        "import sys\nfrom canon.core.online import sampled\n"
        "ids = sys.stdin.read().split()\nrate = float(sys.argv[1])\n"
        "sys.stdout.write(''.join('1' if sampled(i, rate, 'bench') else '0' for i in ids))"
    )
    for rate in (0.01, 0.05, 0.2, 0.5):
        count = sum(sampled(i, rate, "bench") for i in ids)
        spread = 2.5758 * math.sqrt(len(ids) * rate * (1 - rate))
        low, high = len(ids) * rate - spread, len(ids) * rate + spread
        outputs = {
            subprocess.run(
                [sys.executable, "-c", code, str(rate)],
                input="\n".join(ids),
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONHASHSEED": str(seed)},
                check=True,
            ).stdout
            for seed in (1, 2, 3)
        }
        mine = "".join("1" if sampled(i, rate, "bench") else "0" for i in ids)
        print(
            f"rate {rate}: {count} of {len(ids)} sampled ({count / len(ids):.4f}); binomial "
            f"99 % interval {low:.0f}-{high:.0f}: {'inside' if low <= count <= high else 'OUTSIDE'}"
            f"; 3 processes agree with this one: {outputs == {mine}}"
        )


# ---------------------------------------------------------------- budget


def budget(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    worst = -1.0
    with tempfile.TemporaryDirectory() as tmp, running_redis(Path(tmp) / "redis") as url:
        project = project_with(Path(tmp), PRICED_JUDGE + "judge_cache: false\n")
        client = connect(url)
        with fake_llm_server.running_fake_llm() as fake:
            script_judge(fake)
            fake.latency = 0.05
            env = model_env(fake.base_url)
            for trial in range(args.trials):
                prefix = f"budget{trial}"
                keys = Keys(prefix)
                ids = [ident_of(rng) for _ in range(args.traces)]
                limit = args.budget
                flags = ("--judge", "--budget", str(limit), "--concurrency", "8")
                workers = [start_worker(project, url, prefix, env, *flags) for _ in range(4)]
                with ingest(url, prefix) as endpoint:
                    post_traces(endpoint, ids, set())
                wait_records(client, keys, len(ids))
                finish(workers)
                records = read_records(client, keys)
                costs = [r["decision"].get("cost", 0.0) for r in records]
                kinds = Counter(r["decision"]["kind"] for r in records)
                day = client.keys(f"{prefix}:budget:*")
                spent = float(client.hget(day[0], "spent") or 0) if day else 0.0
                dearest = max(costs)
                over = spent - (limit + dearest)
                worst = max(worst, over)
                print(
                    f"trial {trial}: budget ${limit:.6f}, spent ${spent:.6f} (records say "
                    f"${sum(costs):.6f}), dearest trace ${dearest:.6f}; judged "
                    f"{kinds['judged']}, budget-dropped {kinds['budget-dropped']}; "
                    f"spend <= budget + dearest: {over <= 1e-12}",
                    flush=True,
                )
    print(f"worst spend - (budget + dearest trace): {worst:+.8f}")


# ---------------------------------------------------------------- throughput


def throughput(args: argparse.Namespace) -> None:
    from canon.monitor.streams import append_spans

    rng = random.Random(3)
    with (
        tempfile.TemporaryDirectory() as tmp,
        running_redis(Path(tmp) / "redis", fsync=args.fsync) as url,
    ):
        client = connect(url)
        plain = project_with(
            Path(tmp) / "plain",
            MODEL_JUDGE + f"judge_cache: false\nconcurrency: {args.judge_concurrency}\n",
        )
        # the ingest endpoint alone: OTLP JSON decoded by opentelemetry-proto, split, XADDed
        ids = [ident_of(rng) for _ in range(args.traces)]
        with ingest(url, "ingest") as endpoint:
            started = time.monotonic()
            post_traces(endpoint, ids, set())
            took = time.monotonic() - started
        print(f"ingest alone: {len(ids)} traces (20 per POST) in {took:.2f} s = "
              f"{len(ids) / took:.0f} traces/s", flush=True)  # fmt: skip
        with fake_llm_server.running_fake_llm() as fake:
            script_judge(fake)
            fake.latency = 0.4
            env = model_env(fake.base_url)
            for judged in (True,) if args.judge_only else (False, True):
                for count in (1, 2, 4):
                    prefix = f"tp{int(judged)}{count}"
                    keys = Keys(prefix)
                    ids = [ident_of(rng) for _ in range(args.traces)]
                    batches = [
                        (i, json.dumps(trace_document(i, ANSWER.format(ident=i))), True)
                        for i in ids
                    ]
                    flags = ("--judge", "--sample", "0.05") if judged else ()
                    before = resource.getrusage(resource.RUSAGE_CHILDREN)
                    workers = [start_worker(plain, url, prefix, env, *flags) for _ in range(count)]
                    time.sleep(2.5)  # the workers start (python and imports) before the clock
                    started = time.monotonic()
                    append_spans(client, keys, STREAMS, batches)
                    ended = wait_records(client, keys, len(ids))
                    finish(workers)
                    calls = len(fake.requests)
                    fake.requests.clear()
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
                    # the settle window (0.2 s) is part of every trace's path
                    print(
                        f"workers, {'judge 0.4 s at 5 %' if judged else 'contracts only':<18} "
                        f"{count} worker(s): {len(ids)} traces from the streams to their "
                        f"records in {ended - started:.2f} s = "
                        f"{len(ids) / (ended - started):.0f} traces/s ({calls} judge calls; "
                        f"the workers used {cpu:.1f} CPU s, start-up and idle exit included)",
                        flush=True,
                    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    one = sub.add_parser("crash")
    one.add_argument("--trials", type=int, default=20)
    one.add_argument("--traces", type=int, default=1000)
    one.add_argument("--seed", type=int, default=1)
    two = sub.add_parser("sample")
    two.add_argument("--ids", type=int, default=10_000)
    three = sub.add_parser("budget")
    three.add_argument("--trials", type=int, default=20)
    three.add_argument("--traces", type=int, default=120)
    three.add_argument("--budget", type=float, default=0.0002)
    three.add_argument("--seed", type=int, default=2)
    four = sub.add_parser("throughput")
    four.add_argument("--traces", type=int, default=1000)
    four.add_argument("--fsync", choices=("always", "everysec"), default="always")
    four.add_argument("--judge-only", action="store_true", help="skip the contracts-only runs")
    four.add_argument(
        "--judge-concurrency", type=int, default=8, help="canon.yaml's concurrency (calls)"
    )
    args = parser.parse_args()
    {"crash": crash, "sample": sample, "budget": budget, "throughput": throughput}[args.mode](args)


if __name__ == "__main__":
    main()
