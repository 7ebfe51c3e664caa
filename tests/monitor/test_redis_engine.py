"""The Redis Streams engine end to end: OTLP in through ingest (an SDK exporter and OTLP
JSON), workers as real processes, records effectively once across a SIGKILL, late spans,
the shared budget, and the report."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from canon.monitor.ingest import make_server
from canon.monitor.streams import Keys, RedisBudget, Worker, connect, read_records

from support.cli import copy_example, run_canon
from support.online import EXAMPLES, emit_example, spans_of, trace_document, trace_id

CONTRACT = str(EXAMPLES / "contract.yaml")


@pytest.fixture
def ingest(redis_url: str) -> Iterator[str]:
    """An ingest endpoint (in this process) feeding 2 streams; yields its traces URL."""
    server = make_server(connect(redis_url), Keys(), 2, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    server.shutdown()
    server.server_close()


def _post(url: str, body: bytes, content_type: str) -> tuple[int, bytes]:
    request = urllib.request.Request(url, body, {"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _send_sdk(url: str, count: int) -> list[str]:
    """``count`` example traces through the OpenTelemetry SDK's OTLP/HTTP protobuf exporter."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
    tracer = provider.get_tracer("billing-agent")
    ids = [emit_example(tracer) for _ in range(count)]
    provider.force_flush()
    provider.shutdown()
    return ids


def _worker(project: Path, url: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable, "-m", "canon", "monitor", "worker", "--redis", url,
            "--streams", "2", "--contract", CONTRACT, "--settle", "0.3", "--claim-idle", "0.5",
            "--lease", "1", "--exit-when-idle", "1.5", *extra,
        ],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def _decisions(url: str) -> list[dict[str, Any]]:
    return [r for r in read_records(connect(url), Keys()) if "decision" in r]


def test_traces_from_an_sdk_exporter_and_otlp_json_are_judged_once_by_two_workers(
    tmp_path: Path, redis_url: str, ingest: str
) -> None:
    project = copy_example(tmp_path)
    ids = _send_sdk(ingest, 6)
    document = trace_document(trace_id(99))
    status, _ = _post(ingest, json.dumps(document).encode(), "application/json")
    assert status == 200
    workers = [_worker(project, redis_url, "--judge") for _ in range(2)]
    for process in workers:
        _, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
    decisions = _decisions(redis_url)
    assert Counter(r["trace_id"] for r in decisions) == Counter([*ids, trace_id(99)])
    assert {r["decision"]["kind"] for r in decisions} == {"judged"}
    assert {r["verdict"]["status"] for r in decisions} == {"pass"}
    result = run_canon(
        project, "monitor", "report", "--redis", redis_url, "--html", str(tmp_path / "t.html")
    )
    assert result.returncode == 0, result.stderr
    assert "7 trace(s) decided: 0 sampled-out, 7 judged" in result.stdout
    assert "P1 held: 100.0% (7/7" in result.stdout
    assert (tmp_path / "t.html").read_text().count("<svg") == 5  # canon rate + 4 principles


def test_a_worker_killed_mid_batch_loses_and_repeats_nothing(
    tmp_path: Path, redis_url: str, ingest: str
) -> None:
    project = copy_example(tmp_path)
    ids = [trace_id(n) for n in range(60)]
    for ident in ids:
        body = json.dumps(trace_document(ident, skip_lookup=int(ident[-1], 16) % 3 == 0))
        assert _post(ingest, body.encode(), "application/json")[0] == 200
    victim = _worker(project, redis_url, "--judge", "--name", "victim")
    client = connect(redis_url)
    deadline = time.monotonic() + 30
    while client.xlen(Keys().records) < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    assert client.xlen(Keys().records) < len(ids)  # killed with work left
    survivors = [_worker(project, redis_url, "--judge") for _ in range(2)]
    for process in survivors:
        _, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
    decisions = _decisions(redis_url)
    counted = Counter(r["trace_id"] for r in decisions)
    assert set(counted) == set(ids) and max(counted.values()) == 1
    kinds = Counter(r["decision"]["kind"] for r in decisions)
    assert kinds["gate-failed"] == sum(int(i[-1], 16) % 3 == 0 for i in ids)


def test_a_span_after_the_decision_is_recorded_late_and_never_judged_again(
    tmp_path: Path, redis_url: str, ingest: str
) -> None:
    project = copy_example(tmp_path)
    document = trace_document(trace_id(5))
    assert _post(ingest, json.dumps(document).encode(), "application/json")[0] == 200
    first = _worker(project, redis_url, "--judge")
    assert first.wait(timeout=60) == 0
    late = trace_document(trace_id(5))
    scope = late["resourceSpans"][0]["scopeSpans"][0]
    scope["spans"] = spans_of(late)[1:2]
    assert _post(ingest, json.dumps(late).encode(), "application/json")[0] == 200
    second = _worker(project, redis_url, "--judge")
    assert second.wait(timeout=60) == 0
    kinds = [r["decision"]["kind"] for r in _decisions(redis_url)]
    assert kinds == ["judged", "late"]


def test_an_entry_handled_twice_makes_one_record(redis_url: str) -> None:
    client = connect(redis_url)
    keys = Keys("twice")
    worker = Worker(client, keys, 1, settle=0, settle_max=60)
    worker.join()
    ident = trace_id(7)
    doc = json.dumps(trace_document(ident))
    client.xadd(keys.stream(0), {"trace": ident, "doc": doc, "root": "1"})
    worker.step()
    assert worker.decide(ident) is None  # decided in step(): nothing left to decide
    assert len(read_records(client, keys)) == 1
    # as if the worker died after recording, before finishing: its successor (once the
    # lease ran out) finishes the trace without a second record
    client.rpush(keys.spans(ident), doc)
    client.hset(keys.meta(ident), mapping={"first": "1", "last": "1", "root": "1"})
    client.set(keys.lease(ident), "dead", px=1)
    time.sleep(0.01)
    assert worker.decide(ident) is False
    assert not client.exists(keys.meta(ident), keys.spans(ident))
    assert len(read_records(client, keys)) == 1


def test_the_shared_budget_lets_one_unpriced_trace_through_then_prices_by_the_dearest(
    redis_url: str,
) -> None:
    client = connect(redis_url)
    one, two = RedisBudget(client, Keys("b"), 1.0), RedisBudget(client, Keys("b"), 1.0)
    now = 1_800_000_000.0
    assert one.reserve(now) == 0.0
    assert two.reserve(now) == "wait"  # the first cost is not known yet: one at a time
    one.settle(0.0, 0.4, now, now)
    assert two.reserve(now) == 0.4
    assert one.reserve(now) is None  # 0.4 spent + 0.4 reserved + 0.4 > 1.0
    two.settle(0.4, 0.4, now, now)
    assert one.spent(now) == pytest.approx(0.8)
    # a new UTC day, a new budget; a trace reserved yesterday is released on yesterday's
    assert one.reserve(now + 86_400) == 0.0
    one.settle(0.0, 0.3, now + 86_400, now + 86_400)
    assert two.reserve(now + 86_400) == 0.3
    assert two.reserve(now + 86_400) == 0.3
    assert two.reserve(now + 86_400) is None  # 0.3 + 0.6 reserved + 0.3 > 1.0
    one.settle(0.3, 0.3, now + 86_400, now + 2 * 86_400)
    assert one.spent(now + 2 * 86_400) == pytest.approx(0.3)


@pytest.mark.parametrize(
    ("body", "content_type", "words"),
    [
        (b"{", "application/json", "not JSON"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}',
         "application/json", "not hex"),
        (b"\xff\xff\xff", "application/x-protobuf", "cannot decode"),
        (b"x", "text/plain", "send application/x-protobuf or application/json"),
    ],
)  # fmt: skip
def test_a_body_that_is_no_otlp_export_is_answered_400_with_the_reason(
    ingest: str, body: bytes, content_type: str, words: str
) -> None:
    status, reply = _post(ingest, body, content_type)
    assert status == 400 and words in reply.decode()


def test_an_unreachable_redis_is_exit_2_naming_it(tmp_path: Path) -> None:
    from support.redis_server import free_port

    url = f"redis://127.0.0.1:{free_port()}/0"
    for command in ("worker", "report", "ingest"):
        result = run_canon(tmp_path, "monitor", command, "--redis", url)
        assert result.returncode == 2
        assert f"--redis {url}: cannot reach Redis" in result.stderr


def test_a_worker_waits_out_a_redis_restart_and_loses_nothing_acknowledged(
    tmp_path: Path,
) -> None:
    from support.redis_server import free_port, missing_reason, start_redis

    reason = missing_reason()
    if reason is not None:
        pytest.skip(reason)
    project = copy_example(tmp_path)
    port, data = free_port(), tmp_path / "redis"
    url = f"redis://127.0.0.1:{port}/0"
    server = start_redis(data, port)
    client = connect(url)
    keys = Keys()
    try:
        for n in range(4):
            doc = json.dumps(trace_document(trace_id(n)))
            client.xadd(keys.stream(0), {"trace": trace_id(n), "doc": doc, "root": "1"})
        worker = _worker(project, url, "--streams", "1", "--exit-when-idle", "4")
        deadline = time.monotonic() + 30
        while client.xlen(keys.records) < 4 and time.monotonic() < deadline:
            time.sleep(0.02)
        server.kill()  # SIGKILL: the append-only file (fsync always) is all that survives
        server.wait()
        time.sleep(0.5)
        server = start_redis(data, port)
        for n in range(4, 8):
            doc = json.dumps(trace_document(trace_id(n)))
            client.xadd(keys.stream(0), {"trace": trace_id(n), "doc": doc, "root": "1"})
        _, err = worker.communicate(timeout=60)
        assert worker.returncode == 0, err
        counted = Counter(r["trace_id"] for r in read_records(client, keys))
        assert counted == Counter(trace_id(n) for n in range(8))
    finally:
        server.kill()
        server.wait()


def _decide_all(worker: Worker) -> None:
    """Decide settled traces until none is left (as the worker's loop would)."""
    deadline = time.monotonic() + 30
    while worker.client.zcard(worker.keys.pending) and time.monotonic() < deadline:
        worker.decide_settled()
        time.sleep(0.01)
    worker.drain()


def test_two_workers_never_judge_one_trace_twice_while_it_waits_in_a_queue(
    tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from canon.check.plan import build_plan
    from canon.monitor.judging import OnlineJudge
    from canon.project.config import load_config

    from support.helper_modules import load_helper
    from support.model_judge import MODEL_JUDGE, model_env, model_project

    fake_llm_server = load_helper("judge/fake_llm_server.py")
    project = model_project(tmp_path, MODEL_JUDGE + "judge_cache: false\n")
    client = connect(redis_url)
    keys = Keys("queue")
    ids = [trace_id(n) for n in range(12)]
    with fake_llm_server.running_fake_llm() as fake:
        fake.script("contradict any part", "ANSWER: no")
        fake.script("", "ANSWER: yes")
        fake.latency = 0.15  # each trace takes ~0.15 s; 12 traces on 2 threads ~0.9 s
        for name, value in model_env(fake.base_url).items():
            monkeypatch.setenv(name, value)
        judge = OnlineJudge(build_plan(load_config(cwd=project)))
        workers = [
            Worker(client, keys, 1, judge=judge, settle=0, lease=0.4, concurrency=2, name=n)
            for n in ("a", "b")
        ]
        workers[0].join()
        for ident in ids:
            doc = json.dumps(trace_document(ident, f"Refunded. Reference {ident}."))
            client.xadd(keys.stream(0), {"trace": ident, "doc": doc, "root": "1"})
        workers[0].step()  # files every entry (and decides what it can)
        threads = [threading.Thread(target=_decide_all, args=(w,)) for w in workers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        asked = Counter(
            ident for body in fake.requests for ident in ids if ident in json.dumps(body)
        )
    assert len(read_records(client, keys)) == len(ids)
    assert len(set(asked.values())) == 1  # every trace asked the same questions, once each


def test_a_trace_whose_worker_died_while_judging_it_is_unscored_not_judged_again(
    tmp_path: Path, redis_url: str
) -> None:
    from canon.check.plan import build_plan
    from canon.monitor.judging import OnlineJudge
    from canon.project.config import load_config

    client = connect(redis_url)
    keys = Keys("died")
    judge = OnlineJudge(build_plan(load_config(cwd=copy_example(tmp_path))))
    worker = Worker(client, keys, 1, judge=judge, settle=0, name="successor")
    worker.join()
    ident = trace_id(3)
    client.set(keys.judging(worker._once_key(ident)), "victim")  # began, then SIGKILL
    doc = json.dumps(trace_document(ident))
    client.xadd(keys.stream(0), {"trace": ident, "doc": doc, "root": "1"})
    worker.step()
    worker.drain()
    [record] = read_records(client, keys)
    assert record["decision"]["kind"] == "unscored"
    assert "worker victim died while judging it" in record["decision"]["cause"]
