"""The SDK edge against a real OTLP/HTTP receiver on 127.0.0.1: what arrives, what fails."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from canon.core.artifact import Artifact
from canon.errors import TelemetrySetupError
from canon.report.otel_events import EvaluationEvent, TraceLink, evaluation_events
from canon.report.otel_export import (
    INSTALL_LINE,
    check_telemetry,
    logs_endpoint,
    send_events,
    trace_links,
)

from support.network import closed_port

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
OTEL_VARIABLES = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_EXPORTER_OTLP_LOGS_TIMEOUT",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_SDK_DISABLED",
)


@pytest.fixture(autouse=True)
def clean_otel_env(monkeypatch):
    """No OTEL_* setting of the machine running the tests leaks into them."""
    for name in OTEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_every_event_arrives_with_its_attributes_parent_and_resource(
    receiver, mixed, plan, monkeypatch
):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    link = TraceLink("5b8efff798038103d269b633813fc60c", "a000000000000001")
    events = evaluation_events(mixed, plan, links={"fine": link}, suite="chat")
    summary = send_events(events, version="1.2.3")
    assert summary.complete and summary.sent == len(events) == len(receiver.records)
    assert summary.endpoint == f"{receiver.endpoint}/v1/logs"
    assert set(receiver.paths) == {"/v1/logs"}
    assert {r["event_name"] for r in receiver.records} == {"gen_ai.evaluation.result"}
    sent = [dict(e.attributes) for e in events]
    assert sorted(map(repr, (r["attributes"] for r in receiver.records))) == sorted(map(repr, sent))
    for record in receiver.records:
        parented = record["attributes"]["canon.artifact.id"] == "fine"
        assert record["trace_id"] == (link.trace_id if parented else "")
        assert record["span_id"] == (link.span_id if parented else "")
        assert record["resource"]["service.name"] == "canon"
        assert record["scope"] == ("canon", "1.2.3")


def test_the_service_name_and_resource_come_from_the_standard_variables(
    receiver, mixed, plan, monkeypatch
):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", f"{receiver.endpoint}/v1/logs")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "billing-evals")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci")
    assert send_events(evaluation_events(mixed[:1], plan), version="0").complete
    resource = receiver.records[0]["resource"]
    assert resource["service.name"] == "billing-evals"
    assert resource["deployment.environment"] == "ci"


def test_more_events_than_the_sdk_queue_holds_all_arrive(receiver, plan, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    events = [
        EvaluationEvent({"gen_ai.evaluation.name": "canon.verdict", "canon.artifact.id": f"a{i}"})
        for i in range(5000)
    ]
    summary = send_events(events, version="0")
    assert summary.complete and summary.sent == 5000
    assert {r["attributes"]["canon.artifact.id"] for r in receiver.records} == {
        f"a{i}" for i in range(5000)
    }


def test_an_endpoint_that_refuses_is_counted_and_described_not_raised(
    receiver, mixed, plan, monkeypatch, capfd
):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    receiver.fail_with = 400
    events = evaluation_events(mixed, plan)
    summary = send_events(events, version="0")
    assert not summary.complete and summary.sent == 0 and summary.total == len(events)
    assert summary.problem is not None and "400" in summary.problem
    assert capfd.readouterr().err == ""  # the SDK's own log lines are collected, not printed


def test_an_unreachable_endpoint_costs_one_timeout_and_is_a_failure(mixed, plan, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    events = [
        EvaluationEvent({"gen_ai.evaluation.name": "canon.verdict", "n": i}) for i in range(1500)
    ]
    summary = send_events(events, version="0")
    assert summary.sent == 0 and not summary.complete
    assert summary.problem


def test_sdk_disabled_sends_nothing_on_purpose(receiver, mixed, plan, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    summary = send_events(evaluation_events(mixed, plan), version="0")
    assert summary.disabled and summary.complete and summary.sent == 0
    assert receiver.records == []


@pytest.mark.parametrize(
    ("name", "value"),
    [("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"), ("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "http/json")],
)
def test_a_protocol_other_than_http_protobuf_is_refused_naming_the_variable(name, value):
    with pytest.raises(TelemetrySetupError, match=rf"^{name}='{value}' is not supported"):
        check_telemetry({name: value})


def test_the_logs_protocol_variable_wins_over_the_general_one():
    env = {
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "http/protobuf",
    }
    assert check_telemetry(env) == "http://localhost:4318/v1/logs"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "http://localhost:4318/v1/logs"),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"},
            "http://collector:4318/v1/logs",
        ),
        (
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://ignored:1",
                "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "https://logs.example/custom",
            },
            "https://logs.example/custom",
        ),
    ],
)
def test_the_logs_endpoint_is_resolved_as_the_exporter_resolves_it(env, expected):
    assert logs_endpoint(env) == expected


@pytest.mark.parametrize("url", ["collector:4318", "ftp://host", "http://", "http://h:port"])
def test_an_endpoint_that_is_no_http_url_is_refused(url):
    with pytest.raises(TelemetrySetupError, match="is not an http:// or https:// URL"):
        check_telemetry({"OTEL_EXPORTER_OTLP_ENDPOINT": url})


def test_a_missing_sdk_is_refused_with_the_pip_install_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk._logs", None)  # import fails
    with pytest.raises(TelemetrySetupError) as caught:
        check_telemetry({})
    assert str(caught.value).endswith(f"run: {INSTALL_LINE}")
    assert INSTALL_LINE == 'pip install "canon-testing[otel]"'


def test_a_setting_broken_after_the_check_is_a_failed_send(mixed, plan, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    summary = send_events(evaluation_events(mixed, plan), version="0")
    assert not summary.complete and "grpc" in (summary.problem or "")


def test_trace_links_read_suite_trace_files_and_name_the_unreadable(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    no_ids = tmp_path / "no-ids.json"
    no_ids.write_text('{"spans": [{"name": "run", "startTime": 1}]}')
    artifacts = [
        Artifact("a", trace=EXAMPLES / "traces" / "duplicate-charge.json", id="traced"),
        Artifact("b", trace=broken, id="broken"),
        Artifact("c", trace=no_ids, id="no-ids"),
        Artifact("d", id="plain"),
    ]
    links, notes = trace_links(artifacts)
    assert links == {
        "traced": TraceLink("5b8efff798038103d269b633813fc60c", "a000000000000001", None)
    }
    assert len(notes) == 2
    assert notes[0].startswith("broken: its trace cannot be read (") and str(broken) in notes[0]
    assert notes[1] == "no-ids: its trace has no W3C trace and span ids"


def test_the_sdk_is_imported_by_its_two_modules_only_and_not_by_the_commands():
    # otel_export sends events through it; check/capture records a test's spans through it;
    # monitor/ingest decodes OTLP requests with opentelemetry-proto's messages (not the SDK)
    package = Path(__file__).resolve().parents[2] / "canon"
    importers = sorted(
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if "from opentelemetry" in path.read_text() or "import opentelemetry" in path.read_text()
    )
    assert importers == ["check/capture.py", "monitor/ingest.py", "report/otel_export.py"]
    import subprocess

    code = (
        "import sys, canon.cli.score, canon.cli.baseline, canon.report.otel_export\n"
        "import canon.check.metric, canon.check.capture, canon.pytest_plugin\n"
        "print(any(m.startswith('opentelemetry') for m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "False"


def test_the_otel_extra_names_the_sdk_and_exporter_and_ci_installs_them():
    import tomllib

    project = tomllib.loads((EXAMPLES.parent / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]

    def names(requirements: list[str]) -> set[str]:
        return {r.split(">")[0].split("=")[0].split("[")[0].strip() for r in requirements}

    wanted = {"opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-http"}
    assert names(extras["otel"]) == wanted
    assert wanted <= names(extras["test"])
    assert project["name"] == "canon-testing"  # what INSTALL_LINE installs
