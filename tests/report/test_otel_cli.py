"""`canon score/check/accept --otel` as real processes, against a real OTLP/HTTP receiver."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.cli import copy_example, invoke_in, run_canon
from support.helper_modules import load_helper
from support.network import closed_port, without_otel

REPO = Path(__file__).resolve().parents[2]
TRACE_ID = "5b8efff798038103d269b633813fc60c"  # examples/traces/duplicate-charge.json
ROOT_SPAN = "a000000000000001"


@pytest.fixture
def fake_llm() -> Iterator[Any]:
    """The judge tests' fake OpenAI-compatible server on 127.0.0.1."""
    with load_helper("judge/fake_llm_server.py").running_fake_llm() as state:
        yield state


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The bundled example project with its accepted baseline."""
    target = copy_example(tmp_path)
    shutil.copytree(REPO / "baselines", target / "baselines")
    return target


def _canon(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_canon(project, *args, env=without_otel(**env))


def test_canon_score_otel_sends_every_verdict_and_answer_parented_to_the_trace(project, receiver):
    completed = _canon(
        project,
        "score",
        "--otel",
        "--format",
        "json",
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
    )
    assert completed.returncode == 0, completed.stderr
    document = json.loads(completed.stdout)
    verdicts = receiver.named("canon.verdict")
    assert sorted(v["attributes"]["canon.artifact.id"] for v in verdicts) == [
        "duplicate-charge",
        "large-refund",
        "roaming-question",
    ]
    for verdict in verdicts:
        attributes = verdict["attributes"]
        record = next(
            a for a in document["artifacts"] if a["key"] == attributes["canon.artifact.id"]
        )
        assert attributes["gen_ai.evaluation.score.value"] == record["score"]
        assert attributes["gen_ai.evaluation.score.label"] == "canon"
        assert attributes["canon.judge.model"] == document["judge"]
        assert attributes["canon.rubric.fingerprint"] == document["rubric"]["fingerprint"]
        assert attributes["canon.suite"] == "suite"
    questions = [r for r in receiver.records if "canon.question.id" in r["attributes"]]
    assert len(questions) == 3 * 10  # five facets, the NSCP gate and four principles each
    tradeoff = receiver.named("canon.tradeoff")
    assert {r["attributes"]["gen_ai.evaluation.score.label"] for r in tradeoff} == {"n/a"}
    gate = receiver.named("canon.G")
    assert {r["attributes"]["gen_ai.evaluation.score.value"] for r in gate} == {1.0}
    contract = receiver.named("canon.gate.contract")
    assert [r["attributes"]["gen_ai.evaluation.score.label"] for r in contract] == ["pass"]
    # the traced artifact's events hang under its trace's root span; the others under none
    for record in receiver.records:
        traced = record["attributes"]["canon.artifact.id"] == "duplicate-charge"
        assert (record["trace_id"], record["span_id"]) == (
            (TRACE_ID, ROOT_SPAN) if traced else ("", "")
        )
    assert {r["event_name"] for r in receiver.records} == {"gen_ai.evaluation.result"}
    assert completed.stderr.strip().endswith(
        f"canon: otel: sent {len(receiver.records)} gen_ai.evaluation.result event(s) to "
        f"{receiver.endpoint}/v1/logs"
    )


def test_canon_check_otel_sends_the_checked_run(project, receiver):
    completed = _canon(
        project, "check", "--otel", "--quiet", OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert len(receiver.named("canon.verdict")) == 3
    # verdicts, answers, the gates that ran, and the comparison with the baseline
    assert len(receiver.records) == 3 + 3 * 10 + 3 + 1
    (check,) = receiver.named("canon.check")
    assert check["attributes"]["gen_ai.evaluation.score.label"] == "conforms"
    assert check["attributes"]["canon.check.regressions"] == 0
    assert completed.stderr == ""  # --quiet: no success note; nothing went wrong


MODEL_CONFIG = "judge_model: openai:fake-judge\nconstitution_path: constitution.yaml\n"


def test_unscored_questions_arrive_with_error_type_and_answers_with_the_judges_reason(
    project, receiver, fake_llm
):
    (project / "canon.yaml").write_text(MODEL_CONFIG + "suite: one.yaml\n")
    (project / "one.yaml").write_text(
        "artifacts:\n  - id: refund\n    text: I refunded the duplicate 19.99 EUR charge.\n"
        "    trace: traces/duplicate-charge.json\n"
    )
    fake_llm.script("contradict any part", "Nothing here contradicts it.\nANSWER: no")
    fake_llm.script("serve the mission", "I would rather not say.")
    fake_llm.script("", "ANSWER: yes")
    completed = _canon(
        project,
        "score",
        "--otel",
        "--quiet",
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        OPENAI_BASE_URL=fake_llm.base_url,
        OPENAI_API_KEY="sk-test",
    )
    assert completed.returncode == 3, completed.stderr
    (mission,) = receiver.named("canon.mission")
    assert mission["attributes"]["error.type"] == "JudgeError"
    assert "gen_ai.evaluation.score.value" not in mission["attributes"]
    (gate,) = receiver.named("canon.G")
    # the judge's reply as Canon records it: its reasoning, then its answer line
    assert gate["attributes"]["gen_ai.evaluation.explanation"].startswith(
        "Nothing here contradicts it."
    )
    assert gate["attributes"]["gen_ai.evaluation.score.label"] == "no"
    (verdict,) = receiver.named("canon.verdict")
    assert verdict["attributes"]["error.type"] == mission["attributes"]["error.type"]
    assert "1 of 10 questions unscored" in verdict["attributes"]["gen_ai.evaluation.explanation"]
    assert verdict["attributes"]["canon.judge.model"] == "openai/fake-judge"
    assert {(r["trace_id"], r["span_id"]) for r in receiver.records} == {(TRACE_ID, ROOT_SPAN)}


def _unreachable() -> dict[str, str]:
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{closed_port()}",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
    }


def test_a_failed_send_is_one_warning_and_leaves_the_exit_code_alone(project):
    completed = _canon(project, "score", "--otel", "--quiet", **_unreachable())
    assert completed.returncode == 0
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("canon: warning: the OTLP endpoint http://127.0.0.1:")
    assert "took 0 of 36 event(s)" in lines[0]
    assert lines[0].endswith("; the verdicts are unchanged")
    assert ".;" not in lines[0]
    assert "3 canon" in completed.stdout


def test_otel_strict_turns_a_failed_send_into_exit_3_when_the_run_passed(project):
    completed = _canon(project, "score", "--otel-strict", "--quiet", **_unreachable())
    assert completed.returncode == 3
    (line,) = completed.stderr.strip().splitlines()
    assert line.startswith("canon: error: the OTLP endpoint http://127.0.0.1:")
    assert line.endswith("the verdicts stand; run again when the endpoint is reachable")


def test_otel_strict_never_hides_a_failing_verdict(project):
    # the NSCP gate trips on every artifact: a run that exits 1 whatever the telemetry does
    (project / "judge-script.yaml").write_text('contradict any part: "yes"\n__default__: "yes"\n')
    completed = _canon(project, "score", "--otel-strict", "--quiet", **_unreachable())
    assert completed.returncode == 1
    assert "canon: warning: the OTLP endpoint" in completed.stderr


def test_canon_otel_variable_turns_sending_on_without_the_flag(project, receiver):
    completed = _canon(
        project, "score", "--quiet", CANON_OTEL="1", OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint
    )
    assert completed.returncode == 0, completed.stderr
    assert len(receiver.named("canon.verdict")) == 3


def test_an_unsupported_protocol_is_exit_2_before_any_judge_call(project):
    completed = _canon(project, "score", "--otel", OTEL_EXPORTER_OTLP_PROTOCOL="grpc")
    assert completed.returncode == 2
    assert completed.stdout == ""
    (line,) = completed.stderr.strip().splitlines()
    assert line == (
        "canon: error: OTEL_EXPORTER_OTLP_PROTOCOL='grpc' is not supported: canon sends OTLP "
        "over HTTP as protobuf; set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf or unset it"
    )


@pytest.mark.parametrize("command", ["score", "check", "accept"])
def test_without_the_sdk_otel_is_exit_2_with_the_pip_line_and_no_judge_call(
    project, monkeypatch, command
):
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk._logs", None)  # as if not installed
    before = sorted(p.name for p in project.rglob("*"))
    result = invoke_in(project, command, "--otel")
    assert result.exit_code == 2
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("canon: error: --otel needs the OpenTelemetry SDK")
    assert line.endswith('run: pip install "canon-testing[otel]"')
    assert sorted(p.name for p in project.rglob("*")) == before  # no cache, no baseline


def test_canon_accept_otel_sends_the_recorded_run(project, receiver, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    (project / "baselines" / "suite.json").unlink()
    result = invoke_in(project, "accept", "--otel", "--quiet")
    assert result.exit_code == 0, result.output
    assert (project / "baselines" / "suite.json").is_file()
    assert len(receiver.named("canon.verdict")) == 3


def test_canon_accept_otel_strict_writes_no_baseline_when_the_send_failed(project, monkeypatch):
    for name, value in _unreachable().items():
        monkeypatch.setenv(name, value)
    (project / "baselines" / "suite.json").unlink()
    result = invoke_in(project, "accept", "--otel-strict", "--quiet")
    assert result.exit_code == 3
    assert "canon: error: the OTLP endpoint" in result.stderr
    assert not (project / "baselines" / "suite.json").exists()
