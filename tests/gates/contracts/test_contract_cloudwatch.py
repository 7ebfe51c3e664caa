"""The CloudWatch monitor end to end, against moto's AWS API emulator on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
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


def _put_at(logs: Any, group: str, stamp_ms: int, spans: list[dict[str, Any]]) -> None:
    events = [{"timestamp": stamp_ms + i, "message": json.dumps(s)} for i, s in enumerate(spans)]
    logs.put_log_events(logGroupName=group, logStreamName="default", logEvents=events)


@pytest.mark.parametrize(("look_back", "status"), [(600.0, "pass"), (0.0, "fail")])
def test_a_span_delivered_late_with_an_early_stamp_joins_its_trace(
    logs: Any, tmp_path: Path, look_back: float, status: str
) -> None:
    group = _group(logs, f"late-child-{status}")
    trace = "1" * 32
    root, tool = _trace(trace, "lookup")
    now = int(time.time() * 1000)
    _put_at(logs, group, now, [root])  # the root came first, stamped now
    moments = iter([0.0, 1.0, 2.0, 9.0])  # the clock at each poll
    polls: list[int] = []

    def deliver_late(_: float) -> None:
        polls.append(1)
        if len(polls) == 1:  # the tool span comes a poll later, stamped before the root
            _put_at(logs, group, now - 5_000, [tool])

    stats = monitor_cloudwatch(
        load_contract(CONTRACT),
        group,
        output_dir=tmp_path,
        settle=5,
        look_back=look_back,
        max_polls=4,
        sleep=deliver_late,
        clock=lambda: next(moments),
        client=logs,
    )
    assert stats.validated == 1
    (record,) = _records(tmp_path)
    # without the look-back the read resumes after the root and the tool span is never seen:
    # the false FAIL the window exists to prevent
    assert record["verdict"]["status"] == status


def test_spans_stamped_before_the_resume_point_are_read_after_a_restart(
    logs: Any, tmp_path: Path
) -> None:
    group = _group(logs, "before-resume")
    now = int(time.time() * 1000)
    early, later = "2" * 32, "3" * 32
    _put_at(logs, group, now, _trace(later, "lookup"))
    contract = load_contract(CONTRACT)

    def run() -> Any:
        return monitor_cloudwatch(
            contract,
            group,
            output_dir=tmp_path,
            max_polls=2,
            sleep=lambda _: None,
            client=logs,
            settle=0,
            look_back=60,
        )

    assert run().validated == 1
    resume = json.loads((tmp_path / ".canon-cloudwatch-state.json").read_text())["resume_ms"]
    assert resume >= now
    _put_at(logs, group, now - 30_000, _trace(early, "lookup"))  # delivered after, stamped before
    second = run()
    assert (second.validated, second.passed) == (1, 1)
    assert sorted(r["verdict"]["execution_id"] for r in _records(tmp_path)) == [early, later]


def test_a_trace_waits_for_the_settle_window_after_its_last_span(logs: Any, tmp_path: Path) -> None:
    group = _group(logs, "settle")
    _put(logs, group, _trace("4" * 32, "lookup"))
    moments = iter([100.0, 103.0, 104.9])  # the clock at each poll

    stats = monitor_cloudwatch(
        load_contract(CONTRACT),
        group,
        output_dir=tmp_path,
        settle=5,
        max_polls=3,
        sleep=lambda _: None,
        clock=lambda: next(moments),
        client=logs,
    )
    assert (stats.validated, stats.pending) == (0, 1)  # quiet polls, but only 4.9 s quiet
    stats = monitor_cloudwatch(
        load_contract(CONTRACT),
        group,
        output_dir=tmp_path,
        settle=5,
        max_polls=2,
        sleep=lambda _: None,
        clock=iter([0.0, 5.0]).__next__,
        client=logs,
    )
    assert (stats.validated, stats.pending) == (1, 0)


def test_a_span_delivered_twice_counts_once(logs: Any, tmp_path: Path) -> None:
    group = _group(logs, "twice")
    spans = _trace("5" * 32, "lookup")
    _put(logs, group, [*spans, spans[1]])  # the exporter retried the tool span
    stats = monitor_cloudwatch(
        load_contract(CONTRACT),
        group,
        output_dir=tmp_path,
        max_polls=2,
        sleep=lambda _: None,
        client=logs,
        settle=0,
    )
    assert stats.validated == 1
    (record,) = _records(tmp_path)
    assert record["execution_summary"]["tool_calls"] == ["lookup"]


def test_traces_an_older_state_file_lists_are_not_validated_again(
    logs: Any, tmp_path: Path
) -> None:
    group = _group(logs, "legacy-state")
    done, new = "6" * 32, "7" * 32
    _put(logs, group, _trace(done, "lookup") + _trace(new, "lookup"))
    (tmp_path / ".canon-cloudwatch-state.json").write_text(
        json.dumps({"log_group": group, "resume_ms": 0, "validated": [done]})
    )
    stats = monitor_cloudwatch(
        load_contract(CONTRACT),
        group,
        output_dir=tmp_path,
        max_polls=2,
        sleep=lambda _: None,
        client=logs,
        settle=0,
    )
    assert stats.validated == 1
    assert [r["verdict"]["execution_id"] for r in _records(tmp_path)] == [new]


@pytest.mark.parametrize(
    "state",
    [
        '{"log_group": "G", "resume_ms": -1}',
        '{"log_group": "G", "resume_ms": "soon"}',
        '{"log_group": "G", "resume_ms": 0, "validated": "all"}',
    ],
)
def test_a_malformed_state_file_is_refused(logs: Any, tmp_path: Path, state: str) -> None:
    group = _group(logs, f"bad-state-{abs(hash(state)) % 10_000}")
    (tmp_path / ".canon-cloudwatch-state.json").write_text(state.replace('"G"', json.dumps(group)))
    with pytest.raises(CloudWatchError, match=r"malformed monitor state; delete it"):
        monitor_cloudwatch(
            load_contract(CONTRACT), group, output_dir=tmp_path, max_polls=1, client=logs
        )


def test_look_back_without_a_log_group_is_a_usage_error(tmp_path: Path) -> None:
    contract = tmp_path / "c.yaml"
    contract.write_text(CONTRACT)
    base = ["contract", "monitor", str(tmp_path), "--contract", str(contract)]
    result = CliRunner().invoke(
        cli, [*base, "--output-dir", str(tmp_path / "out"), "--look-back", "60"]
    )
    assert result.exit_code == 2
    assert "--look-back goes with --cloudwatch-log-group" in result.output
    result = CliRunner().invoke(cli, [*base, "--output-dir", str(tmp_path), "--settle", "-1"])
    assert result.exit_code == 2
    assert "--settle" in result.output


def _monitor_once(
    group: str, tmp_path: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """`canon contract monitor` on the emulator for two polls, as a real process in ``env``."""
    contract = tmp_path / "c.yaml"
    contract.write_text(CONTRACT)
    command = ["contract", "monitor", "--contract", str(contract), "--cloudwatch-log-group", group]
    polls = ["--max-polls", "2", "--poll-interval", "0", "--settle", "0"]
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "canon.cli",
            *command,
            "--output-dir",
            str(tmp_path / "audit"),
            *polls,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _env_without_region(aws_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    unset = ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    env.update({k: v for k, v in aws_env.items() if k != "AWS_DEFAULT_REGION"})
    env["AWS_CONFIG_FILE"] = str(tmp_path / "no-aws-config")  # no profile region either
    return env


def test_the_region_comes_from_aws_region_as_the_aws_cli_reads_it(
    logs: Any, aws_env: dict[str, str], tmp_path: Path
) -> None:
    group = _group(logs, "region-from-aws-region")
    _put(logs, group, _trace("f" * 32, "lookup"))
    env = {**_env_without_region(aws_env, tmp_path), "AWS_REGION": "us-east-1"}
    result = _monitor_once(group, tmp_path, env)
    assert result.returncode == 0, result.stderr
    assert "validated 1 trace(s)" in result.stdout


def test_no_region_anywhere_is_exit_2_naming_how_to_give_one(
    logs: Any, aws_env: dict[str, str], tmp_path: Path
) -> None:
    result = _monitor_once("aws/spans", tmp_path, _env_without_region(aws_env, tmp_path))
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr == (
        "canon: error: the CloudWatch monitor needs the log group's AWS region: pass --region "
        "REGION, or set AWS_REGION (or AWS_DEFAULT_REGION, or region in your AWS profile)\n"
    )


def test_a_profile_that_does_not_exist_is_exit_2_naming_it(
    logs: Any, aws_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**_env_without_region(aws_env, tmp_path), "AWS_PROFILE": "no-such-profile"}
    result = _monitor_once("aws/spans", tmp_path, env)
    assert result.returncode == 2, result.stderr
    assert result.stderr == (
        "canon: error: the CloudWatch monitor cannot use the AWS configuration: The config "
        "profile (no-such-profile) could not be found\n"
    )


def test_the_cloudwatch_monitor_judges_each_trace_once_with_its_request_and_answer(
    logs: Any, tmp_path: Path
) -> None:
    from canon.check.plan import build_plan
    from canon.monitor.judging import Judged, OnlineJudge
    from canon.project.config import load_config

    from support.cli import copy_example

    group = _group(logs, "judged")
    good, bad = "d" * 32, "e" * 32
    spans = _trace(good, "lookup") + _trace(bad, "guess")
    for span in spans:
        if not span["parentSpanId"]:
            span["attributes"].update({"input.value": "Refund me", "output.value": "Refunded."})
    _put(logs, group, spans)
    seen: list[Judged] = []
    plan = build_plan(load_config(cwd=copy_example(tmp_path)))
    judge = OnlineJudge(plan)
    out = tmp_path / "audit"
    for _ in range(2):  # the second session finds both decided
        monitor_cloudwatch(
            load_contract(CONTRACT), group, output_dir=out, max_polls=2, client=logs, settle=0,
            sleep=lambda _: None, judge=judge,
            on_judged=lambda judged, execution: seen.append(judged),
        )  # fmt: skip
    decisions = {r["trace"].rsplit("/", 1)[1]: r["decision"] for r in _records(out)}
    assert decisions[good]["kind"] == "judged" and decisions[good]["verdict"] == "canon"
    assert decisions[bad]["kind"] == "gate-failed"
    assert len(seen) == 1 and seen[0].result is not None
    assert seen[0].decision.trace_id == good


def test_with_a_judge_a_span_after_the_decision_is_recorded_late_once(
    logs: Any, tmp_path: Path
) -> None:
    from canon.check.plan import build_plan
    from canon.monitor.judging import OnlineJudge
    from canon.project.config import load_config

    from support.cli import copy_example

    plan = build_plan(load_config(cwd=copy_example(tmp_path)))
    group = _group(logs, "late")
    trace = "e" * 32
    _put(logs, group, _trace(trace, "lookup"))
    out = tmp_path / "audit"

    def watch() -> Any:  # a fresh monitor each time: a restart reads the group again
        return monitor_cloudwatch(
            load_contract(CONTRACT), group, output_dir=out, max_polls=2,
            sleep=lambda _: None, client=logs, settle=0, judge=OnlineJudge(plan),
        )  # fmt: skip

    assert watch().validated == 1
    late = _span(trace, "0000000000000003", "0000000000000001", "execute_tool lookup")
    _put(logs, group, [late])
    # restarted: the decided spans are read again (the look-back) and are not late; the
    # new one is, once (a second restart reads it again and records nothing)
    again = watch()
    assert (again.validated, again.late) == (0, 1)
    third = watch()
    assert (third.validated, third.late) == (0, 0)
    records = _records(out)
    kinds = sorted(r["decision"]["kind"] for r in records)
    assert kinds == ["late", "unscored"]  # the test trace has no answer for the judge
    (record,) = [r for r in records if r["decision"]["kind"] == "late"]
    assert record["trace_id"] == trace and "verdict" not in record
    assert "0000000000000003" in record["decision"]["cause"]


def test_a_restarted_cloudwatch_monitor_does_not_spend_the_days_budget_twice(
    logs: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from canon.check.plan import build_plan
    from canon.monitor.judging import LocalBudget, OnlineJudge
    from canon.project.config import load_config

    from support.helper_modules import load_helper
    from support.model_judge import PRICED_JUDGE, model_env, model_project

    fake_llm_server = load_helper("judge/fake_llm_server.py")
    project = model_project(tmp_path, PRICED_JUDGE + "judge_cache: false\nthreshold: 0.5\n")
    group = _group(logs, "budget")
    out = tmp_path / "audit"
    limit = 0.00002

    def put(first: int) -> None:
        for n in range(first, first + 6):
            spans = _trace(f"{n + 1:032x}", "lookup")
            spans[0]["attributes"].update({"input.value": f"Refund {n}", "output.value": "Done."})
            _put(logs, group, spans)

    with fake_llm_server.running_fake_llm() as fake:
        fake.script("", "ANSWER: yes")
        for name, value in model_env(fake.base_url).items():
            monkeypatch.setenv(name, value)
        plan = build_plan(load_config(cwd=project))

        def run() -> None:  # a new process: a new budget, the same output dir
            monitor_cloudwatch(
                load_contract(CONTRACT), group, output_dir=out, max_polls=2, client=logs,
                settle=0, sleep=lambda _: None, judge=OnlineJudge(plan, budget=LocalBudget(limit)),
            )  # fmt: skip

        put(0)
        run()
        calls = len(fake.requests)
        judged = [r["decision"] for r in _records(out) if r["decision"]["kind"] == "judged"]
        assert judged and calls
        put(6)
        run()  # restarted the same UTC day, with six more sampled traces
        assert len(fake.requests) == calls, "the restarted monitor asked the judge again"
    decisions = [r["decision"] for r in _records(out)]
    assert len(decisions) == 12
    assert [d for d in decisions if d["kind"] == "judged"] == judged
    assert {d["kind"] for d in decisions} == {"judged", "budget-dropped"}
    spent = sum(d.get("cost", 0.0) for d in decisions)
    assert spent <= limit + max(d["cost"] for d in judged)
