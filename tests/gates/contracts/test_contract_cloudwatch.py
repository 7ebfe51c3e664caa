"""The CloudWatch monitor end to end, against moto's AWS API emulator on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from canon.cli import main as cli
from canon.gates.contracts import load_contract
from canon.monitor import CloudWatchError, monitor_cloudwatch

boto3 = pytest.importorskip("boto3")

REAL = Path(__file__).resolve().parents[2] / "corpus" / "real-traces"
CONTRACT = """
name: needs-lookup
version: "1"
constraints:
  - type: must_include_steps
    steps: [lookup]
"""
GROUP = "aws/spans"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def aws_env() -> Iterator[dict[str, str]]:
    """A moto server on 127.0.0.1 and the environment that points boto3 at it."""
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                pytest.fail("moto server did not start")
            time.sleep(0.1)
    env = {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    yield env
    server.terminate()
    server.wait(timeout=10)


@pytest.fixture
def logs(aws_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """A logs client on the emulator, with a fresh log group named after the test."""
    for key, value in aws_env.items():
        monkeypatch.setenv(key, value)
    client = boto3.client("logs", region_name="us-east-1")
    return client


def _group(logs: Any, name: str) -> str:
    logs.create_log_group(logGroupName=name)
    logs.create_log_stream(logGroupName=name, logStreamName="default")
    return name


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


def _trace(trace: str, tool: str) -> list[dict[str, Any]]:
    return [
        _span(
            trace,
            "0000000000000001",
            None,
            "invoke_agent a",
            **{"gen_ai.operation.name": "invoke_agent"},
        ),
        _span(
            trace,
            "0000000000000002",
            "0000000000000001",
            f"execute_tool {tool}",
            **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool},
        ),
    ]


def _put(logs: Any, group: str, spans: list[dict[str, Any]]) -> None:
    now = int(time.time() * 1000)
    events = [{"timestamp": now + i, "message": json.dumps(s)} for i, s in enumerate(spans)]
    logs.put_log_events(logGroupName=group, logStreamName="default", logEvents=events)


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("*.json")) if p.name[0] != "."]


def test_completed_traces_are_validated_once_across_restarts(logs: Any, tmp_path: Path) -> None:
    group = _group(logs, "restarts")
    good, bad = "a" * 32, "b" * 32
    _put(logs, group, _trace(good, "lookup") + _trace(bad, "guess"))
    contract = load_contract(CONTRACT)
    out = tmp_path / "audit"
    first = monitor_cloudwatch(
        contract, group, output_dir=out, max_polls=2, sleep=lambda _: None, client=logs, settle=0
    )
    assert (first.validated, first.passed, first.failed, first.pending) == (2, 1, 1, 0)
    statuses = sorted((r["verdict"]["status"], r["trace"]) for r in _records(out))
    assert statuses == [
        ("fail", f"cloudwatch:{group}/{bad}"),
        ("pass", f"cloudwatch:{group}/{good}"),
    ]
    # a restart reads the group again but validates nothing twice; a new trace is validated
    later = "c" * 32
    _put(logs, group, _trace(later, "lookup"))
    second = monitor_cloudwatch(
        contract, group, output_dir=out, max_polls=2, sleep=lambda _: None, client=logs, settle=0
    )
    assert (second.validated, second.passed) == (1, 1)
    records = _records(out)
    assert len(records) == 3
    assert sorted(r["monitor_key"] for r in records) == [
        f"cloudwatch:{group}/{trace}" for trace in (good, bad, later)
    ]


def test_a_trace_is_not_validated_before_it_is_complete(logs: Any, tmp_path: Path) -> None:
    group = _group(logs, "partial")
    trace = "d" * 32
    root, tool = _trace(trace, "lookup")
    _put(logs, group, [tool])  # the root span has not arrived yet
    contract = load_contract(CONTRACT)
    polls: list[int] = []

    def arrive_late(_: float) -> None:
        polls.append(1)
        if len(polls) == 1:
            _put(logs, group, [root])

    stats = monitor_cloudwatch(
        contract, group, output_dir=tmp_path, max_polls=2, sleep=arrive_late, client=logs, settle=0
    )
    assert (stats.validated, stats.pending) == (0, 1)  # the root came in the last poll
    stats = monitor_cloudwatch(
        contract,
        group,
        output_dir=tmp_path,
        max_polls=2,
        sleep=lambda _: None,
        client=logs,
        settle=0,
    )
    assert (stats.validated, stats.passed) == (1, 1)
    (record,) = _records(tmp_path)
    assert record["verdict"]["execution_id"] == trace


def test_a_real_adot_session_export_is_read_from_the_log_group(logs: Any, tmp_path: Path) -> None:
    group = _group(logs, "adot")
    spans = json.loads((REAL / "strands-evals/claude_adot_spans.json").read_text())["spans"]
    _put(logs, group, spans)
    contract = load_contract(CONTRACT.replace("[lookup]", "[Bash]"))
    # its root span's parent lives in another service: complete after three quiet polls
    stats = monitor_cloudwatch(
        contract,
        group,
        output_dir=tmp_path,
        max_polls=4,
        sleep=lambda _: None,
        client=logs,
        settle=0,
    )
    assert (stats.validated, stats.passed) == (1, 1)


def test_an_event_that_is_no_span_is_counted_and_never_validated(logs: Any, tmp_path: Path) -> None:
    group = _group(logs, "junk")
    now = int(time.time() * 1000)
    logs.put_log_events(
        logGroupName=group,
        logStreamName="default",
        logEvents=[{"timestamp": now, "message": "plain text, not a span"}],
    )
    _put(logs, group, _trace("f" * 32, "lookup"))
    stats = monitor_cloudwatch(
        load_contract(CONTRACT),
        group,
        output_dir=tmp_path,
        max_polls=2,
        sleep=lambda _: None,
        client=logs,
        settle=0,
    )
    assert (stats.validated, stats.passed, stats.errors) == (1, 1, 1)


def test_a_missing_log_group_is_a_clear_error(logs: Any, tmp_path: Path) -> None:
    with pytest.raises(CloudWatchError, match=r"cloudwatch:no-such-group: reading the log group"):
        monitor_cloudwatch(
            load_contract(CONTRACT), "no-such-group", max_polls=1, client=logs, settle=0
        )


def test_without_boto3_the_command_names_the_install_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)  # as if it were not installed
    contract = tmp_path / "c.yaml"
    contract.write_text(CONTRACT)
    result = CliRunner().invoke(
        cli,
        [
            *("contract", "monitor", "--contract", str(contract)),
            *("--output-dir", str(tmp_path), "--cloudwatch-log-group", GROUP),
        ],
    )
    assert result.exit_code == 2
    assert 'pip install "canon-testing[cloudwatch]"' in result.output


def test_the_command_wants_exactly_one_place_to_watch(tmp_path: Path) -> None:
    contract = tmp_path / "c.yaml"
    contract.write_text(CONTRACT)
    base = ["contract", "monitor", "--contract", str(contract), "--output-dir", str(tmp_path)]
    for extra in ([], [str(tmp_path), "--cloudwatch-log-group", GROUP]):
        result = CliRunner().invoke(cli, base + extra)
        assert result.exit_code == 2
        assert "either WATCH_DIR or --cloudwatch-log-group" in result.output


def test_region_without_a_log_group_is_a_usage_error(tmp_path: Path) -> None:
    contract = tmp_path / "c.yaml"
    contract.write_text(CONTRACT)
    result = CliRunner().invoke(
        cli,
        [
            *("contract", "monitor", str(tmp_path), "--contract", str(contract)),
            *("--output-dir", str(tmp_path / "out"), "--region", "eu-west-1"),
        ],
    )
    assert result.exit_code == 2
    assert "--region goes with --cloudwatch-log-group" in result.output


def test_a_state_file_of_another_log_group_is_refused(logs: Any, tmp_path: Path) -> None:
    (tmp_path / ".canon-cloudwatch-state.json").write_text(
        '{"log_group": "other", "resume_ms": 0, "validated": []}'
    )
    group = _group(logs, "state-mismatch")
    with pytest.raises(CloudWatchError, match=r"not the state of a monitor of log group"):
        monitor_cloudwatch(
            load_contract(CONTRACT), group, output_dir=tmp_path, max_polls=1, client=logs, settle=0
        )


def test_the_command_stops_cleanly_on_sigint(
    logs: Any, aws_env: dict[str, str], tmp_path: Path
) -> None:
    group = _group(logs, "sigint")
    _put(logs, group, _trace("e" * 32, "lookup"))
    contract = tmp_path / "c.yaml"
    contract.write_text(CONTRACT)
    out = tmp_path / "audit"
    process = subprocess.Popen(
        [
            *(
                sys.executable,
                "-m",
                "canon.cli",
                "contract",
                "monitor",
                "--contract",
                str(contract),
            ),
            *("--output-dir", str(out), "--cloudwatch-log-group", group, "--region", "us-east-1"),
            *("--poll-interval", "0.2", "--settle", "0"),
        ],
        env={**os.environ, **aws_env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not list(out.glob("pass_*.json")):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no audit record within a minute"
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert "validated 1 trace(s)" in stdout
    (record,) = _records(out)
    assert record["monitor_key"] == f"cloudwatch:{group}/{'e' * 32}"
    assert json.loads((out / ".canon-cloudwatch-state.json").read_text())["resume_ms"] > 0
