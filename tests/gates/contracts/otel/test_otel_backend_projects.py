"""Backend containers read from a second project's recordings (issue 16, section 1).

Each expectation was written after reading the spans: the framework, the tool calls in
order, and the start of the request and the answer a person reading them sees.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from canon.cli.contract import contract
from canon.gates.contracts.execution import Execution
from canon.gates.contracts.otel import (
    TraceError,
    normalize_trace,
    normalize_traces,
    parse_trace_text,
)
from canon.gates.contracts.otel.spans import collect_spans

TESTS = Path(__file__).resolve().parents[3]
BACKENDS = TESTS / "corpus" / "backends"
REAL = TESTS / "corpus" / "real-traces"
GENKIT = BACKENDS / "datadog/ddtrace_js_genkit_live_capture.trimmed.json"
BEEAI = BACKENDS / "langfuse/beeai-2025-08-01.trimmed.json"


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _tools(execution: Execution) -> list[str]:
    return [step.name for step in execution.steps if step.kind == "tool_call"]


# Datadog APM: dd-trace-js (Genkit) and the APM test agent's own snapshots


def test_datadog_dd_trace_js_genkit_capture() -> None:
    # a payload of trace chunks per trace, as dd-trace-js sends them: three levels of arrays
    workflow, failing = normalize_traces(_json(GENKIT), source="genkit.json")
    assert workflow.framework == "genkit"
    # the decimal uint64 id in hex: the low half of the span's own llmobs_trace_id tag
    assert workflow.execution_id == "6a55a09a000000007e8d16c7cb7ed632"  # _dd.p.tid + trace_id
    assert [(step.kind, step.name) for step in workflow.steps] == [
        ("agent", "genkit.workflow"),
        ("custom", "genkit.workflow"),
        ("retrieval", "genkit.request"),
        ("model_call", "genkit.request"),
        ("model_call", "genkit.request"),
        ("tool_call", "lookupWeather"),
        ("model_call", "genkit.request"),
    ]
    step = workflow.steps[1]
    assert all(s.parent_id == step.span_id for s in workflow.steps[2:])
    assert workflow.steps[0].attributes["genkit.action.name"] == "offlineWorkflow"
    # APM spans carry no prompt or answer (dd-trace-js sends those to LLM Observability)
    assert (workflow.input_text, workflow.output_text) == (None, None)
    (call,) = failing.steps
    assert (call.kind, call.name, call.status) == ("tool_call", "failingTool", "error")
    assert call.attributes["error.message"] == "intentional tool runner failure"


def test_a_datadog_decimal_string_id_is_the_integer_it_spells() -> None:
    span = _json(GENKIT)[0][0][5]  # lookupWeather
    as_ints = {key: int(span[key]) for key in ("trace_id", "span_id", "parent_id")}
    from_text = normalize_trace([[span]])
    from_ints = normalize_trace([[{**span, **as_ints}]])
    assert from_text.steps[0].span_id == from_ints.steps[0].span_id == "648db4fbc12761ba"
    assert from_text.steps[0].parent_id == from_ints.steps[0].parent_id == "39deb0fbc20627d7"
    assert from_text.execution_id == from_ints.execution_id


@pytest.mark.parametrize("bad", [True, "not-a-number", -5, None])
def test_a_datadog_trace_id_that_is_no_number_names_no_trace(bad: object) -> None:
    span = {**_json(GENKIT)[0][0][5], "trace_id": bad}
    (step,) = normalize_trace([[span]]).steps
    assert step.name == "lookupWeather"  # the span is kept; its trace id is not invented
    batch = collect_spans([[span]], source="x")
    assert batch.spans[0].trace_id in ("", "not-a-number")


def test_datadog_test_agent_snapshot_numbers_its_traces_from_zero() -> None:
    raw = _json(BACKENDS / "datadog/test_agent_multi_trace.json")
    runs = normalize_traces(raw, source="snapshot.json")
    assert [run.execution_id for run in runs] == ["0" * 32, "0" * 31 + "1"]
    assert [list(run.step_names()) for run in runs] == [["root0", "child0"], ["root1", "child1"]]
    for run in runs:  # parent_id 0 is a root; each child under its own trace's root
        root, child = run.steps
        assert (root.parent_id, child.parent_id) == ("", root.span_id)
    with pytest.raises(TraceError, match="holds 2 separate runs"):
        normalize_trace(raw, source="snapshot.json")


# OpenTelemetry Collector file exporter: the specification's examples, swift-otel's output


def _spec_lines(*kinds: str) -> str:
    names = [f"collector/otel-spec-file-exporter-{kind}.trimmed.jsonl" for kind in kinds]
    return "".join((BACKENDS / name).read_text(encoding="utf-8") for name in names)


def test_collector_file_exporter_spec_lines_mixed_in_one_file() -> None:
    text = _spec_lines("traces", "metrics", "logs")
    raw = parse_trace_text(text, source="otel.jsonl")
    batch = collect_spans(raw, source="otel.jsonl")
    # both records name no span of the file (one names span 0102040800000000, one none)
    assert (batch.log_records, batch.unjoined_logs, batch.metrics_skipped) == (2, 2, 1)
    execution = normalize_trace(raw, source="otel.jsonl")
    assert [(s.name, s.status) for s in execution.steps] == [
        ("operationA", "error"),  # status code 2, "status-cancelled"
        ("operationB", "unset"),
    ]
    assert _tools(execution) == []
    assert (execution.input_text, execution.output_text) == (None, None)
    assert execution.metadata["resource-attr"] == "resource-attr-val-1"
    (span, _) = batch.spans
    assert [event.name for event in span.events] == ["event-with-attr", "event"]


def test_a_collector_file_of_log_records_only_says_what_it_holds() -> None:
    text = (BACKENDS / "collector/swift-otel-collector-logs.jsonl").read_text(encoding="utf-8")
    raw = parse_trace_text(text, source="logs.json")
    with pytest.raises(TraceError, match=r"^logs\.json: not a trace: it holds 2 OpenTelemetry"):
        normalize_trace(raw, source="logs.json")


def test_swift_otel_log_records_beside_spans_are_counted_not_joined() -> None:
    logs = (BACKENDS / "collector/swift-otel-collector-logs.jsonl").read_text(encoding="utf-8")
    raw = parse_trace_text(_spec_lines("traces") + logs, source="mixed.jsonl")
    batch = collect_spans(raw, source="mixed.jsonl")
    assert (batch.log_records, batch.unjoined_logs) == (2, 2)  # their request span is in Jaeger
    assert list(normalize_trace(raw).step_names()) == ["operationA", "operationB"]


# AWS Bedrock AgentCore: the Evaluate request and the code-based evaluator's Lambda event


def _adot_spans() -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = _json(REAL / "strands-evals/claude_adot_spans.json")["spans"]
    return spans


@pytest.mark.parametrize(
    "envelope",
    [
        # the Evaluate API request body
        {"evaluatorId": "Builtin.Correctness", "evaluationTarget": {"traceIds": ["t"]}},
        # the event a code-based evaluator's Lambda receives
        {
            "schemaVersion": "1.0",
            "evaluatorId": "custom-abc1234567",
            "evaluatorName": "Check",
            "evaluationLevel": "TRACE",
            "evaluationReferenceInputs": [],
            "evaluationTarget": {"traceIds": ["t"], "spanIds": []},
        },
    ],
)
def test_agentcore_evaluation_input_envelopes_are_read(envelope: dict[str, Any]) -> None:
    raw = {**envelope, "evaluationInput": {"sessionSpans": _adot_spans()}}
    execution = normalize_trace(raw, source="event.json")
    assert execution.framework == "claude_agent_sdk"
    assert _tools(execution) == ["Agent", "Agent", "Bash", "Bash"]
    assert (execution.input_text or "").startswith("What is 42 * 7")


def test_an_evaluation_input_holding_no_spans_is_refused_by_name() -> None:
    with pytest.raises(TraceError, match=r"^event\.json: .*evaluationInput"):
        normalize_trace({"evaluationInput": {"sessionSpans": []}}, source="event.json")
    with pytest.raises(TraceError, match=r"^event\.json: .*at top level\.evaluationInput"):
        normalize_trace({"evaluationInput": {"traces": 3}}, source="event.json")


# BeeAI through Langfuse: one call recorded as start, success and finish TOOL spans


def test_langfuse_beeai_export() -> None:
    execution = normalize_trace(_json(BEEAI))
    assert execution.framework == "beeai"
    assert execution.execution_id == "096fc09a30ab90d2431778f9ee2b3936"
    # Wikipedia from its TOOL spans; OpenMeteoTool, whose TOOL spans the export lacks, from
    # the agent's update that holds its result
    assert _tools(execution) == ["tool.search.wikipedia", "OpenMeteoTool"]
    wikipedia, weather = (step for step in execution.steps if step.kind == "tool_call")
    assert wikipedia.inputs == {"query": "Tourism in Barcelona", "full_text": False}
    assert wikipedia.parent_id == "ff8b04dfe1f3e047"  # the agent's update that chose it
    assert weather.inputs == {"location_name": "Barcelona", "country": "Spain"}
    assert weather.outputs["current"]["temperature_2m"] == 29
    assert weather.span_id == "477d350ab1c6548d"  # agent.react.update-18
    kinds = {step.name: step.kind for step in execution.steps}
    assert kinds["tool.search.wikipedia.start-12"] == "custom"
    assert kinds["tool.search.wikipedia.finish-12"] == "custom"
    assert kinds["agent.react.update-13"] == "agent"  # chose Wikipedia, holds no result
    assert kinds["backend.openai.chat.finish-16"] == "model_call"
    assert kinds["beeai-framework-main"] == "agent"
    assert (execution.input_text or "").startswith("I'm planning a trip to Barcelona, Spain.")
    # BeeAI writes the answer as a Python repr of the message; the reader sees its text
    assert (execution.output_text or "").startswith("Barcelona is a vibrant city known for")


def _weather_update(export: dict[str, Any]) -> dict[str, Any]:
    """agent.react.update-18: the agent's record of its OpenMeteoTool step."""
    found: dict[str, Any] = next(o for o in export["observations"] if o["id"] == "477d350ab1c6548d")
    return found


def test_an_agent_update_in_an_iteration_with_tool_spans_is_not_counted_again() -> None:
    # the full export's update-14 has this shape: Wikipedia's result, in iteration-1 beside
    # Wikipedia's own TOOL spans; it is the same call
    export = _json(BEEAI)
    update = _weather_update(export)
    update["parentObservationId"] = "c48e7d031a4cb886"
    update["metadata"]["attributes"]["tool.name"] = "Wikipedia"
    execution = normalize_trace(export)
    assert _tools(execution) == ["tool.search.wikipedia"]
    assert next(s for s in execution.steps if s.span_id == "477d350ab1c6548d").kind == "agent"


@pytest.mark.parametrize(
    ("change", "value"),
    [
        ("tool.name", 5),  # no tool name
        ("tool.name", "  "),
        ("output.value", None),  # no result: the agent only chose the tool
        ("target", "agent.react.partial_update"),  # a partial update repeats the step
    ],
)
def test_an_agent_update_that_records_no_finished_tool_step_is_no_call(
    change: str, value: object
) -> None:
    export = _json(BEEAI)
    update = _weather_update(export)
    update["metadata"]["attributes"][change] = value
    if change == "output.value":
        update["output"] = None
    assert _tools(normalize_trace(export)) == ["tool.search.wikipedia"]


def test_an_agent_update_whose_parent_is_not_in_the_file_is_still_the_call() -> None:
    export = _json(BEEAI)
    _weather_update(export)["parentObservationId"] = "0000000000abcdef"
    assert _tools(normalize_trace(export)) == ["tool.search.wikipedia", "OpenMeteoTool"]


@pytest.mark.parametrize(
    "written",
    [
        "{'role': 'assistant', 'text': \"unterminated",  # no literal
        "{'role': 'user', 'text': 'not the answer'}",  # a user message is no answer
        "{'role': 'assistant', 'text': " + repr("x" * 200_001) + "}",  # too long to read
        "{'role': 'assistant', 'text': 42}",  # no text
    ],
)
def test_a_repr_that_is_no_assistant_message_is_kept_as_written(written: str) -> None:
    export = _json(BEEAI)
    root = next(o for o in export["observations"] if o["parentObservationId"] is None)
    root["metadata"]["attributes"]["output.value"] = written
    assert normalize_trace(export).output_text == written


# The CLI on a backend file of several runs


def test_contract_run_gives_the_genkit_capture_one_verdict_per_trace(tmp_path: Path) -> None:
    contract_file = tmp_path / "weather.yaml"
    contract_file.write_text(
        'name: weather\nversion: "1"\nconstraints:\n'
        "  - type: must_include_steps\n    steps: [lookupWeather]\n",
        encoding="utf-8",
    )
    args = ["run", "--contract", str(contract_file), "--traces", str(GENKIT), "--json"]
    result = CliRunner().invoke(contract, args, catch_exceptions=False)
    records = json.loads(result.stdout)["records"]
    assert [(r["trace_id"], r["verdict"]["status"]) for r in records] == [
        ("6a55a09a000000007e8d16c7cb7ed632", "pass"),
        ("6a55a09a00000000020d73f240356ebf", "fail"),  # failingTool's run calls no lookupWeather
    ]
