"""`pytest --canon-otel`: the plugin's verdicts arrive at a real OTLP/HTTP receiver.

The user's suite runs through ``pytester`` in a subprocess, in a copy of the bundled
example project, with ``OTEL_EXPORTER_OTLP_ENDPOINT`` pointing at the receiver the tests
start on 127.0.0.1 (``otlp_receiver.py``).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from support.network import closed_port

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
TRACE_ID = "5b8efff798038103d269b633813fc60c"  # examples/traces/duplicate-charge.json
ROOT_SPAN = "a000000000000001"
EVENTS_PER_ARTIFACT = 11  # the verdict and ten questions (gates add theirs)

USER_TESTS = """
from pathlib import Path

from canon import Artifact

DUPLICATE = (
    "I can see two charges of 19.99 EUR on 3 March. Section 4.2 of the billing handbook "
    "covers duplicate charges, so I have refunded the second one."
)


def test_reply_coheres(canon_metric):
    canon_metric.assert_coheres("I passed your 640 EUR dispute to a colleague.")


def test_traced_reply_coheres(canon_metric):
    trace = Path("traces/duplicate-charge.json")
    canon_metric.assert_coheres(Artifact(text=DUPLICATE, trace=trace, id="traced"))


def test_reply_holds_its_baseline(canon_baseline):
    canon_baseline.check("I noted your roaming question.", id="roaming")
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """The example project (its mock judge, policy and contract) with the user's tests."""
    for entry in EXAMPLES.iterdir():
        target = pytester.path / entry.name
        if entry.is_dir():
            shutil.copytree(entry, target)
        else:
            shutil.copy(entry, target)
    pytester.makepyfile(test_agent=USER_TESTS)
    for name in ("CANON_OTEL", "CANON_OTEL_STRICT", "OTEL_SDK_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    for name in list(__import__("os").environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)
    return pytester


def _accept(project: pytest.Pytester) -> None:
    recorded = project.runpytest_subprocess("-q", "--canon-accept")
    recorded.assert_outcomes(passed=3)


def _endpoint(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)


def test_canon_otel_sends_every_verdict_the_fixtures_reach(
    project: pytest.Pytester, receiver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _accept(project)
    assert receiver.records == []  # not asked to send: nothing sent
    _endpoint(monkeypatch, receiver.endpoint)
    result = project.runpytest_subprocess("-q", "--canon-otel")
    result.assert_outcomes(passed=3)
    verdicts = receiver.named("canon.verdict")
    ids = sorted(v["attributes"]["canon.artifact.id"] for v in verdicts)
    assert len(ids) == 3 and "traced" in ids and "roaming" in ids
    labels = {v["attributes"]["gen_ai.evaluation.score.label"] for v in verdicts}
    assert labels == {"canon"}
    suites = {
        v["attributes"]["canon.artifact.id"]: v["attributes"]["canon.suite"] for v in verdicts
    }
    assert suites["roaming"] == "pytest" and suites["traced"] == "pytest"
    questions = [r for r in receiver.records if "canon.question.id" in r["attributes"]]
    assert len(questions) == 3 * 10
    # the baseline check ends with the comparison's own event
    (check,) = receiver.named("canon.check")
    assert check["attributes"]["gen_ai.evaluation.score.label"] == "conforms"
    # the traced artifact's events hang under its trace's root span; the others under none
    for record in receiver.records:
        traced = record["attributes"].get("canon.artifact.id") == "traced"
        assert (record["trace_id"], record["span_id"]) == (
            (TRACE_ID, ROOT_SPAN) if traced else ("", "")
        )
    assert {r["event_name"] for r in receiver.records} == {"gen_ai.evaluation.result"}
    total = len(receiver.records)
    result.stdout.fnmatch_lines(
        [f"canon: otel: sent {total} gen_ai.evaluation.result event(s) for 3 artifact(s) to *"]
    )


def test_otel_true_in_canon_yaml_sends_without_the_option(
    project: pytest.Pytester, receiver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = project.path / "canon.yaml"
    config.write_text(config.read_text() + "otel: true\n")
    _endpoint(monkeypatch, receiver.endpoint)
    result = project.runpytest_subprocess("-q", "-k", "coheres")
    result.assert_outcomes(passed=2, deselected=1)
    assert len(receiver.named("canon.verdict")) == 2
    # CANON_OTEL=0 beats canon.yaml
    receiver.records.clear()
    monkeypatch.setenv("CANON_OTEL", "0")
    quiet = project.runpytest_subprocess("-q", "-k", "coheres")
    quiet.assert_outcomes(passed=2, deselected=1)
    assert receiver.records == []
    assert "canon: otel" not in quiet.stdout.str()


def test_a_failing_verdict_is_sent_and_the_test_still_fails(
    project: pytest.Pytester, receiver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project.path / "judge-script.yaml").write_text(
        'contradict any part: "yes"\n__default__: "yes"\n'
    )
    _endpoint(monkeypatch, receiver.endpoint)
    result = project.runpytest_subprocess("-q", "--canon-otel", "-k", "coheres")
    result.assert_outcomes(failed=2, deselected=1)
    verdicts = receiver.named("canon.verdict")
    assert [v["attributes"]["gen_ai.evaluation.score.label"] for v in verdicts] == [
        "non_canon",
        "non_canon",
    ]
    assert {v["attributes"]["canon.gated"] for v in verdicts} == {True}


def test_a_failed_send_is_a_warning_and_changes_no_outcome(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _endpoint(monkeypatch, f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    result = project.runpytest_subprocess("-q", "--canon-otel", "-k", "coheres")
    result.assert_outcomes(passed=2, deselected=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "canon: otel: warning: the OTLP endpoint http://127.0.0.1:* took 0 of * event(s): *"
            "; the test outcomes are unchanged"
        ]
    )


def test_an_unusable_setup_stops_the_run_before_any_test(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    result = project.runpytest_subprocess("-q", "--canon-otel")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*canon: OTEL_EXPORTER_OTLP_PROTOCOL='grpc' is not supported*"])
    assert "passed" not in result.stdout.str()  # no test ran


def test_an_unusable_setup_asked_for_by_canon_yaml_errors_the_tests_naming_why(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = project.path / "canon.yaml"
    config.write_text(config.read_text() + "otel: true\n")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    result = project.runpytest_subprocess("-q", "-k", "coheres")
    result.assert_outcomes(errors=2, deselected=1)
    result.stdout.fnmatch_lines(["*OTEL_EXPORTER_OTLP_PROTOCOL='grpc' is not supported*"])


def test_a_bad_canon_otel_value_errors_the_tests_naming_the_variable(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CANON_OTEL", "maybe")
    result = project.runpytest_subprocess("-q", "-k", "coheres")
    result.assert_outcomes(errors=2, deselected=1)
    result.stdout.fnmatch_lines(["*CANON_OTEL='maybe': expected 1 or 0 (true or false)*"])


def test_under_xdist_each_worker_sends_what_it_judged(
    project: pytest.Pytester, receiver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _accept(project)
    _endpoint(monkeypatch, receiver.endpoint)
    result = project.runpytest_subprocess("-q", "-n", "2", "--canon-otel")
    result.assert_outcomes(passed=3)
    verdicts = receiver.named("canon.verdict")
    assert len(verdicts) == 3
    assert len({v["attributes"]["canon.artifact.id"] for v in verdicts}) == 3
    assert len(receiver.named("canon.check")) == 1
