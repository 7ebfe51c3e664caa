"""Exports of observability backends, read from real recordings (issue 16, sections 1, 2, 4).

Each expectation was written after reading the spans: the framework, the tool calls in
order, and the start of the request and the answer a person reading them sees.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from canon.gates.contracts.execution import Execution
from canon.gates.contracts.loader import load_contract
from canon.gates.contracts.otel import TraceError, normalize_trace, parse_trace_text
from canon.gates.contracts.otel.spans import collect_spans
from canon.gates.contracts.validate import validate

TESTS = Path(__file__).resolve().parents[3]
BACKENDS = TESTS / "corpus" / "backends"
REAL = TESTS / "corpus" / "real-traces"


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _tools(execution: Execution) -> list[str]:
    return [step.name for step in execution.steps if step.kind == "tool_call"]


# Langfuse trace exports {trace, observations[]}


def test_langfuse_microsoft_agent_framework_export() -> None:
    export = _json(BACKENDS / "langfuse/microsoft-agent-2025-10-14.trimmed.json")
    execution = normalize_trace(export)
    assert execution.framework == "microsoft_agent_framework"
    assert execution.execution_id == "e3a407423619277a2dcef3c13dc89982"
    assert _tools(execution) == ["get_weather"]
    assert (execution.input_text or "").startswith("What's the weather like in Portland")
    assert (execution.output_text or "").startswith("The weather in Portland is currently stormy")
    call = next(step for step in execution.steps if step.kind == "tool_call")
    assert call.inputs == {"location": "Portland"}
    assert call.outputs == "The weather in Portland is stormy with a high of 19°C."
    assert call.parent_id == "026d1c61bcaa1743"
    assert execution.metadata["service.name"] == "agent_framework"


def test_langfuse_koog_export() -> None:
    execution = normalize_trace(_json(BACKENDS / "langfuse/koog-2025-08-26.trimmed.json"))
    assert execution.framework == "koog"
    # both tools start in the same millisecond: file order breaks the tie
    assert _tools(execution) == ["ByeTool", "HelloTool"]
    assert (execution.input_text or "").startswith("Greet and say goodbye to the user")
    assert execution.output_text == "Hello my darling Bob! And, bye my dear Bob!"
    kinds = {step.name: step.kind for step in execution.steps}
    assert kinds["llm.chat"] == "model_call"
    assert kinds["run.6f8d2449-33ed-4c7c-82e7-5410e34ee4e6"] == "agent"


def test_a_langfuse_api_trace_with_observations_inside_is_read_too() -> None:
    export = _json(BACKENDS / "langfuse/koog-2025-08-26.trimmed.json")
    nested = {"trace": {**export["trace"], "observations": export["observations"]}}
    assert _tools(normalize_trace(nested)) == ["ByeTool", "HelloTool"]


def test_a_langfuse_error_level_observation_is_a_failed_step() -> None:
    export = _json(BACKENDS / "langfuse/microsoft-agent-2025-10-14.trimmed.json")
    export["observations"][3]["level"] = "ERROR"
    call = next(s for s in normalize_trace(export).steps if s.kind == "tool_call")
    assert call.status == "error"


def test_a_langfuse_tool_observation_without_otel_attributes_is_a_tool() -> None:
    # Vercel AI SDK through Langfuse: a TOOL observation named after its tool
    export = _json(BACKENDS / "langfuse/microsoft-agent-2025-10-14.trimmed.json")
    tool = export["observations"][3]
    tool["name"], tool["metadata"]["attributes"] = "getWeather", {}
    assert _tools(normalize_trace(export)) == ["getWeather"]


# Datadog APM trace arrays


def test_datadog_pydantic_ai_snapshot() -> None:
    execution = normalize_trace(
        _json(BACKENDS / "datadog/pydantic_ai_test_agent_with_tools.json"), source="dd.json"
    )
    assert execution.framework == "pydantic_ai"
    assert _tools(execution) == ["calculate_square_tool"]
    assert [step.kind for step in execution.steps] == ["agent", "tool_call"]
    assert execution.steps[1].parent_id == execution.steps[0].span_id
    assert execution.metadata["service.name"] == "tests.contrib.pydantic_ai"
    assert execution.steps[0].attributes["pydantic_ai.request.model"] == "gpt-4o"


def test_datadog_crewai_snapshot() -> None:
    execution = normalize_trace(_json(BACKENDS / "datadog/crewai_test_crew_with_tool.json"))
    assert execution.framework == "crewai"
    assert _tools(execution) == ["Average Calculator"]
    assert list(execution.step_names()) == [
        "CrewAI Crew",
        "Calculate participants' average ages",
        "Python Data Analyst",
        "Average Calculator",
    ]
    assert execution.steps[1].start_ns == 1776697996878816339
    assert execution.steps[1].end_ns == 1776697996878816339 + 20581416


def test_datadog_pydantic_ai_tool_span_is_named_by_its_resource() -> None:
    # older ddtrace names every tool span "pydantic_ai.tool" and puts the tool in "resource"
    traces = _json(BACKENDS / "datadog/pydantic_ai_test_agent_with_tools.json")
    traces[0][1].update(name="pydantic_ai.tool", resource="calculate_square_tool")
    execution = normalize_trace(traces)
    assert _tools(execution) == ["calculate_square_tool"]
    assert "pydantic_ai" not in execution.step_names()


def test_datadog_claude_agent_sdk_tool_span_names_its_tool() -> None:
    traces = _json(BACKENDS / "datadog/pydantic_ai_test_agent_with_tools.json")
    traces[0][1].update(name="claude_agent_sdk.tool.Bash", resource="claude_agent_sdk.tool")
    assert _tools(normalize_trace(traces)) == ["Bash"]


def test_datadog_error_flag_fails_the_step() -> None:
    traces = _json(BACKENDS / "datadog/crewai_test_crew_with_tool.json")
    traces[0][3]["error"] = 1
    assert normalize_trace(traces).steps[3].status == "error"


def test_a_datadog_file_of_two_traces_is_two_runs() -> None:
    from canon.gates.contracts.otel import normalize_traces

    first = _json(BACKENDS / "datadog/pydantic_ai_test_agent_with_tools.json")[0]
    second = _json(BACKENDS / "datadog/crewai_test_crew_with_tool.json")[0]
    for span in second:
        span["trace_id"] = 7
    for span in first:
        span["trace_id"] = 9
    runs = normalize_traces([first, second])
    assert [_tools(run) for run in runs] == [["Average Calculator"], ["calculate_square_tool"]]


# Zipkin v2


def test_zipkin_lens_testdata() -> None:
    execution = normalize_trace(_json(BACKENDS / "zipkin/zipkin_lens_skew.json"))
    assert execution.execution_id == "1e223ff1f80f1c69"
    assert list(execution.step_names()) == ["post", "async", "get", "post"]
    assert _tools(execution) == []
    root = next(step for step in execution.steps if not step.parent_id)
    assert root.name == "get" and root.span_id == "bf396325699c84bf"
    assert execution.steps[1].end_ns - execution.steps[1].start_ns == 65_000_000
    assert execution.metadata["service.name"] in {"servicea", "serviceb"}


def test_zipkin_collector_receiver_testdata() -> None:
    execution = normalize_trace(_json(BACKENDS / "zipkin/collector_zipkinreceiver_sample3.json"))
    (step,) = execution.steps
    assert (step.name, step.status) == ("get", "error")
    assert step.attributes["http.path"] == "/api"
    assert step.attributes["span.kind"] == "client"
    assert execution.execution_id == "4d1e00c0db9010db86154a4ba6e91385"


def test_a_zipkin_span_without_a_name_is_kept_as_an_unnamed_step() -> None:
    spans = _json(BACKENDS / "zipkin/collector_zipkinreceiver_sample3.json")
    del spans[0]["name"]
    assert list(normalize_trace(spans).step_names()) == ["(unnamed span)"]


# AWS Bedrock AgentCore: CloudWatch Logs Insights rows and evaluation session input


def test_agentcore_cloudwatch_rows_of_log_records_alone_are_no_trace() -> None:
    rows = _json(BACKENDS / "agentcore/starter_toolkit_langchain_tool_runtime_logs.trimmed.json")
    with pytest.raises(TraceError, match=r"^rows\.json: not a trace: it holds 3 OpenTelemetry"):
        normalize_trace(rows, source="rows.json")


def test_agentcore_session_spans_envelope() -> None:
    spans = _json(REAL / "strands-evals/claude_adot_spans.json")["spans"]
    execution = normalize_trace({"sessionSpans": spans})
    assert execution.framework == "claude_agent_sdk"
    assert _tools(execution) == ["Agent", "Agent", "Bash", "Bash"]
    assert (execution.input_text or "").startswith("What is 42 * 7")
    assert (execution.output_text or "").startswith("Here are your results")


def _chat_span_for_the_log_rows() -> dict[str, Any]:
    # the span the recorded log rows name; the recording kept only its log records
    return {
        "traceId": "691eb3981d03a56943bfe83732bf8aca",
        "spanId": "b480f86e7a557277",
        "name": "chat us.anthropic.claude-3-5-haiku-20241022-v1:0",
        "startTimeUnixNano": 1763619737370000000,
        "endTimeUnixNano": 1763619739070000000,
        "attributes": {"gen_ai.operation.name": "chat", "gen_ai.system": "aws.bedrock"},
    }


def test_split_telemetry_joins_log_records_to_their_span() -> None:
    rows = _json(BACKENDS / "agentcore/starter_toolkit_langchain_tool_runtime_logs.trimmed.json")
    session = {"sessionSpans": [_chat_span_for_the_log_rows(), *rows]}
    execution = normalize_trace(session)
    assert execution.input_text == (
        "calculate currentv time in difefrent formats using code interoprter  "
    )
    contract = load_contract(
        """
name: split
version: "1"
constraints:
  - type: must_include_steps
    steps: [never_called]
    when: {input_matches: "currentv time"}
"""
    )
    assert validate(contract, execution).status == "fail"  # the log's prompt was seen
    batch = collect_spans(session, source="s")
    assert (batch.log_records, batch.unjoined_logs) == (3, 1)  # one names another span


def test_split_telemetry_feeds_tool_results_to_tool_result_matches() -> None:
    tool = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "name": "execute_tool lookup",
        "startTimeUnixNano": "1544712660000000000",
        "endTimeUnixNano": "1544712661000000000",
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}}],
    }
    record = {
        "timeUnixNano": "1544712660500000000",
        "eventName": "gen_ai.choice",
        "traceId": tool["traceId"],
        "spanId": tool["spanId"],
        "body": {"kvlistValue": {"values": [{"key": "message", "value": {"stringValue": "42"}}]}},
    }
    lines = [
        json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [tool]}]}]}),
        json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}),
    ]
    execution = normalize_trace(parse_trace_text("\n".join(lines)))
    assert execution.steps[0].outputs == 42  # the log body, read as JSON text


# OpenTelemetry Collector file exporter: JSON lines of traces, logs and metrics


def _collector_lines() -> str:
    documents = [
        _json(REAL / "otel-proto/trace.json"),
        _json(REAL / "otel-proto/logs.json"),
        _json(BACKENDS / "collector/otel-proto-metrics.json"),
    ]
    return "\n".join(json.dumps(document) for document in documents)


def test_collector_file_reads_spans_joins_logs_and_counts_metrics() -> None:
    raw = parse_trace_text(_collector_lines(), source="collector.jsonl")
    batch = collect_spans(raw, source="collector.jsonl")
    assert (batch.log_records, batch.unjoined_logs, batch.metrics_skipped) == (1, 0, 1)
    execution = normalize_trace(raw, source="collector.jsonl")
    assert list(execution.step_names()) == ["I'm a server span"]
    (span,) = batch.spans
    assert span.events[-1].attributes["content"] == "Example log record"


def test_a_collector_file_of_metrics_only_names_what_it_holds() -> None:
    with pytest.raises(TraceError, match=r"m\.json: .*1 OTLP metrics document\(s\)"):
        normalize_trace(_json(BACKENDS / "collector/otel-proto-metrics.json"), source="m.json")


# error messages name the object refused and the key holding what was ignored


def test_no_spans_error_names_the_keys_that_hold_lists() -> None:
    with pytest.raises(TraceError) as raised:
        normalize_trace({"items": [{"foo": 1}], "count": 1}, source="odd.json")
    message = str(raised.value)
    assert message.startswith("odd.json: ")
    assert "lists under ['items'] hold no spans" in message
    assert "flushed" not in message


def test_an_empty_span_list_still_says_the_exporter_may_not_have_flushed() -> None:
    with pytest.raises(TraceError, match="flushed"):
        normalize_trace({"resourceSpans": []}, source="empty.json")


# Vercel AI SDK: known by its attributes, not by an "ai." name prefix


def test_vercel_tool_span_named_after_its_tool_is_still_a_tool() -> None:
    # Langfuse shows a Vercel AI SDK tool span under its tool's name ("getWeather")
    attributes = {
        "ai.operationId": "ai.toolCall",
        "ai.toolCall.name": "getWeather",
        "ai.toolCall.args": '{"city": "Oslo"}',
        "ai.toolCall.result": '{"temp": 3}',
    }
    span = {
        "name": "getWeather",
        "spanId": "a1",
        "startTimeUnixNano": "1711000000000000000",
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
    }
    execution = normalize_trace({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})
    (call,) = execution.steps
    assert (call.kind, call.name) == ("tool_call", "getWeather")
    assert (call.inputs, call.outputs) == ({"city": "Oslo"}, {"temp": 3})
    assert execution.framework == "vercel_ai"


def test_a_span_named_ai_dot_without_vercel_attributes_is_not_classified_as_vercel() -> None:
    raw = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "name": "ai.toolCall",
                                "spanId": "a1",
                                "startTimeUnixNano": "1711000000000000000",
                            }
                        ]
                    }
                ]
            }
        ]
    }
    assert normalize_trace(raw).steps[0].kind == "custom"


# BeeAI: one OpenInference TOOL span per emitter event of one call


def _beeai_tool_span(event: str, number: int) -> dict[str, Any]:
    # recorded in langfuse/langfuse's beeai-2025-08-01.json (observation 49b16d9910843ef4,
    # "tool.search.wikipedia.success-12"); the start and finish spans differ by event only
    return {
        "id": f"49b16d991084{number:04x}",
        "traceId": "096fc09a30ab90d2431778f9ee2b3936",
        "type": "SPAN",
        "parentObservationId": "ff8b04dfe1f3e047",
        "startTime": "2025-08-01T13:56:57.468Z",
        "endTime": "2025-08-01T13:57:11.334Z",
        "name": f"tool.search.wikipedia.{event}-{number}",
        "metadata": {
            "attributes": {
                "target": f"tool.search.wikipedia.{event}",
                "name": event,
                "traceId": "0cff2691-3a45-4988-a243-8cb8c508aa25",
                "tool.parameters": {"query": "Tourism in Barcelona", "full_text": False},
                "openinference.span.kind": "TOOL",
            },
            "scope": {"name": "openinference.instrumentation.beeai", "version": "0.1.33"},
        },
        "level": "DEFAULT",
    }


def test_beeai_emitter_event_tool_spans_are_one_call() -> None:
    agent = {
        "id": "ff8b04dfe1f3e047",
        "traceId": "096fc09a30ab90d2431778f9ee2b3936",
        "type": "AGENT",
        "parentObservationId": None,
        "startTime": "2025-08-01T13:56:54.163Z",
        "endTime": "2025-08-01T13:57:11.336Z",
        "name": "beeai-framework-main",
        "metadata": {"attributes": {"openinference.span.kind": "AGENT"}},
    }
    events = [("start", 11), ("success", 12), ("finish", 13)]
    export = {
        "trace": {"id": "096fc09a30ab90d2431778f9ee2b3936"},
        "observations": [agent, *(_beeai_tool_span(e, n) for e, n in events)],
    }
    execution = normalize_trace(export)
    assert execution.framework == "beeai"
    assert _tools(execution) == ["tool.search.wikipedia"]
    assert len(execution.steps) == 4  # the start and finish spans stay steps, not calls


def test_a_langfuse_session_of_two_exports_is_two_runs() -> None:
    from canon.gates.contracts.otel import normalize_traces

    koog = _json(BACKENDS / "langfuse/koog-2025-08-26.trimmed.json")
    agent = _json(BACKENDS / "langfuse/microsoft-agent-2025-10-14.trimmed.json")
    runs = normalize_traces([agent, koog])
    assert [run.execution_id for run in runs] == [
        "dff173a675b759ce1b70e522b27d6846",  # runs come in start order
        "e3a407423619277a2dcef3c13dc89982",
    ]
    assert [_tools(run) for run in runs] == [["ByeTool", "HelloTool"], ["get_weather"]]
    with pytest.raises(TraceError, match="holds 2 separate runs"):
        normalize_trace([agent, koog])


def test_the_single_event_form_in_a_log_record_gives_the_request_and_answer() -> None:
    span = _chat_span_for_the_log_rows()
    messages_in = [{"role": "user", "parts": [{"type": "text", "content": "Which gate?"}]}]
    messages_out = [{"role": "assistant", "parts": [{"type": "text", "content": "Gate 12."}]}]
    record = {
        "timeUnixNano": "1763619738000000000",
        "eventName": "gen_ai.client.inference.operation.details",
        "traceId": span["traceId"],
        "spanId": span["spanId"],
        "attributes": [
            {"key": "gen_ai.input.messages", "value": {"stringValue": json.dumps(messages_in)}},
            {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(messages_out)}},
        ],
    }
    logs = {"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}
    execution = normalize_trace([{"sessionSpans": [span]}, logs])
    assert (execution.input_text, execution.output_text) == ("Which gate?", "Gate 12.")


def test_malformed_log_containers_are_skipped_not_fatal() -> None:
    span = _chat_span_for_the_log_rows()
    odd = {"resourceLogs": [3, {"scopeLogs": "x"}, {"scopeLogs": [{"logRecords": [None, 5]}]}]}
    execution = normalize_trace([{"sessionSpans": [span]}, odd])
    assert execution.step_names() == (span["name"],)


def test_datadog_trace_ids_are_128_bits_where_the_first_span_carries_the_high_half() -> None:
    from canon.gates.contracts.otel import normalize_traces

    traces = _json(BACKENDS / "datadog/ddtrace_js_genkit_live_capture.trimmed.json")
    runs = normalize_traces(traces)
    # _dd.p.tid on each trace's first span + the 64-bit trace_id, as the W3C id is written
    assert sorted(run.execution_id for run in runs) == [
        "6a55a09a00000000020d73f240356ebf",  # trace_id 147901847069617855
        "6a55a09a000000007e8d16c7cb7ed632",  # trace_id 9118969867863512626
    ]
    for payload in traces:  # agent payloads, each a list of traces of spans
        for trace in payload:
            for span in trace:
                span.get("meta", {}).pop("_dd.p.tid", None)
    assert sorted(run.execution_id for run in normalize_traces(traces)) == [
        "0000000000000000020d73f240356ebf",
        "00000000000000007e8d16c7cb7ed632",
    ]


@pytest.mark.parametrize("tid", ["6a55a09a", "6a55a09a0000000g", 7, "6A55A09A00000000"])
def test_a_datadog_high_half_that_is_not_16_hex_digits_is_not_used(tid: object) -> None:
    traces = _json(BACKENDS / "datadog/crewai_test_crew_with_tool.json")
    traces[0][0]["meta"]["_dd.p.tid"] = tid
    expected = "6a55a09a000000000000000000000000" if tid == "6A55A09A00000000" else "0" * 32
    assert normalize_trace(traces).execution_id == expected
