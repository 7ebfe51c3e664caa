"""The trace shapes other projects write, one behaviour each (issue 10, items 1-7)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from canon.gates.contracts.execution import Execution
from canon.gates.contracts.generate import generate_contract
from canon.gates.contracts.otel import TraceError, normalize_trace, parse_trace_text
from canon.gates.contracts.otel.values import normalize_id, to_nanos

TESTS = Path(__file__).resolve().parents[3]
REAL = TESTS / "corpus" / "real-traces"
EARLIER = TESTS / "corpus" / "traces"


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def _tools(execution: Execution) -> list[str]:
    return [step.name for step in execution.steps if step.kind == "tool_call"]


# 1. log records are not spans; a contract never names a placeholder


def test_otel_log_records_are_not_a_trace() -> None:
    with pytest.raises(TraceError, match=r"logs\.json: not a trace: it holds 8 OpenTelemetry log"):
        normalize_trace(_json(REAL / "agentops/log_spans.json"), source="logs.json")


def test_a_log_record_beside_real_spans_is_left_out() -> None:
    spans = _json(EARLIER / "any-agent/OPENAI_trace.json")["spans"]
    record = _json(REAL / "agentops/log_spans.json")[0]
    execution = normalize_trace({"spans": [*spans, record]})
    assert len(execution.steps) == len(spans)
    assert "(unnamed span)" not in execution.step_names()


def test_a_generated_contract_never_names_an_unnamed_span() -> None:
    raw = {"spans": [{"name": 3, "spanId": "a1", "startTimeUnixNano": "1711000000000000000"}]}
    raw["spans"].append({**raw["spans"][0], "spanId": "a2", "name": "real step"})
    execution = normalize_trace({"resourceSpans": [{"scopeSpans": [{"spans": raw["spans"]}]}]})
    assert "(unnamed span)" in execution.step_names()  # kept as a step, never as a contract term
    contract = generate_contract(execution, name="c")
    assert "(unnamed span)" not in json.dumps([repr(c) for c in contract.constraints])


# 2. a bare array of Jaeger spans


def test_a_bare_jaeger_span_array_keeps_names_ids_parents_errors_and_services() -> None:
    execution = normalize_trace(_json(REAL / "jaeger/anonymizer_trace_success.json"))
    first, second = execution.steps
    assert (first.name, first.span_id, first.parent_id) == (
        "a071653098f9250d",
        "7606ddfe69932d34",
        "492770a15935810f",
    )
    assert second.parent_id == first.span_id
    assert (first.status, second.status) == ("unset", "error")
    assert execution.execution_id == "2be38093ead7a083"
    assert execution.metadata["service.name"] in {"16af988c443cff37", "3c220036602f839e"}


def test_an_api_response_envelope_around_otlp_is_read() -> None:
    execution = normalize_trace(_json(REAL / "jaeger/apiv3_GetTrace.json"))
    assert execution.step_names() == ("foobar",)
    assert execution.steps[0].status == "error"
    assert execution.execution_id == "00000000000000000000000000000001"


# 3. Monocle and Okahu


def test_monocle_mcp_child_does_not_count_its_tool_call_twice() -> None:
    execution = normalize_trace(_json(REAL / "monocle/test_openai_agents_sdk.json"))
    calls = [s for s in execution.steps if s.kind == "tool_call"]
    assert [s.name for s in calls] == ["get_weather"] * 3
    assert [s.inputs for s in calls] == [
        {"city": "New York"},
        {"city": "London"},
        {"city": "Tokyo"},
    ]
    assert calls[0].outputs == {"temperature": 50}
    mcp = [s for s in execution.steps if s.attributes.get("span.type") == "agentic.mcp.invocation"]
    assert len(mcp) == 3 and {s.kind for s in mcp} == {"custom"}


def test_two_instrumentations_of_one_tool_call_count_once() -> None:
    # ADK's own execute_tool span and Monocle's FunctionTool span record one call
    execution = normalize_trace(_json(REAL / "monocle/test_adk_single_agent.json"))
    assert _tools(execution) == ["get_weather"]
    assert {s.name for s in execution.steps if s.kind == "custom"} >= {"get_weather"}


def test_parallel_calls_of_one_tool_in_one_tree_stay_separate() -> None:
    execution = normalize_trace(_json(REAL / "strands-evals/otel_genai_convention_spans.json"))
    assert _tools(execution) == ["get_weather", "get_weather"]


def test_monocle_span_types_give_step_kinds_and_the_framework() -> None:
    execution = normalize_trace(_json(REAL / "monocle/test_crewai_single_agent.json"))
    kinds = {s.name: s.kind for s in execution.steps}
    assert kinds["crewai.agent.Agent.execute_task"] == "agent"
    assert kinds["litellm.llms.openai.openai.OpenAIChatCompletion.completion"] == "model_call"
    assert kinds["workflow"] == "custom"
    assert execution.framework == "crewai"
    retrieval = normalize_trace(
        _json(REAL / "monocle/test_aws_genai_idp_retrieve_and_generate.json")
    )
    assert "retrieval" in {s.kind for s in retrieval.steps}


def test_okahu_export_names_spans_and_reads_python_literal_tool_arguments() -> None:
    execution = normalize_trace(_json(REAL / "monocle/okahu_loader_be1db024.json"))
    tool = next(s for s in execution.steps if s.kind == "tool_call")
    assert tool.name == "okahu_demo_fs_tool_check_balance"
    assert tool.inputs == {"account_id": "ACC-9901-S"}
    assert tool.outputs["balance"] == 87500.0
    assert execution.input_text == "What is the balance on ACC-9901-S?"


# 4. Tempo base64 ids


def test_base64_trace_and_span_ids_are_decoded_to_hex() -> None:
    document = _json(EARLIER / "agentevals-kagent/tempo_export_with_batches.json")
    for block in document["batches"]:
        for scope in block["instrumentationLibrarySpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    execution = normalize_trace(document)
    assert execution.execution_id == "dd547580319ab0312cee07f1def50dad"
    assert _tools(execution) == ["helm_list_releases"]
    known = {s.span_id for s in execution.steps}
    assert all(len(s.span_id) == 16 for s in execution.steps)
    assert sum(1 for s in execution.steps if s.parent_id in known) > len(known) // 2


@pytest.mark.parametrize(
    ("raw", "width", "expected"),
    [
        ("5B8EFFF798038103D269B633813FC60C", 32, "5b8efff798038103d269b633813fc60c"),
        ("Ib6zI9ZmEPc=", 16, "21beb323d66610f7"),
        ("adot-tool-1", 16, "adot-tool-1"),  # not hex and not padded base64: as written
        ("0x00000000000000ff", 16, "00000000000000ff"),
        ("0X00000000000000FF", 16, "00000000000000ff"),
        ("0x" + "0" * 16, 16, ""),  # the OTel SDK's "no parent", with its prefix
        ("0x" + "0" * 32, 32, ""),
        ("0x", 16, ""),
    ],
)
def test_ids_are_rendered_as_lower_case_hex(raw: str, width: int, expected: str) -> None:
    assert normalize_id(raw, width) == expected


# 5. OpenInference multi-part content


def test_openinference_multi_part_content_is_the_answer_not_the_raw_response() -> None:
    path = REAL / "strands-evals/openai_agents_openinference_live_spans.json"
    execution = normalize_trace(_json(path))
    assert (execution.output_text or "").startswith("The result of \\( 42 \\) multiplied")


def test_reasoning_parts_are_not_the_answer() -> None:
    execution = normalize_trace(_json(REAL / "strands-evals/claude_adot_spans.json"))
    assert (execution.output_text or "").startswith("Here are your results")


# 6. payload envelopes


def _oi_tool(inputs: str, outputs: str) -> dict[str, Any]:
    return {
        "name": "t",
        "spanId": "a1",
        "startTimeUnixNano": "1711000000000000000",
        "attributes": {
            "openinference.span.kind": "TOOL",
            "tool.name": "t",
            "input.value": inputs,
            "output.value": outputs,
        },
    }


@pytest.mark.parametrize(
    ("inputs", "outputs", "expected"),
    [
        ('{"kwargs": {"a": 1}}', '{"ok": 1}', ({"a": 1}, {"ok": 1})),
        (
            '{"args": [], "kwargs": {"a": 1}}',
            '{"content": "x", "tool_name": "t", "raw_input": {}, "raw_output": {"ok": 2}}',
            ({"a": 1}, {"ok": 2}),
        ),
        ("{}", '{"content": "5", "tool_name": "t", "raw_output": null}', ({}, 5)),
        ("{}", '{"type": "text", "text": "{\\"ok\\": 3}", "annotations": null}', ({}, {"ok": 3})),
    ],
)
def test_tool_payload_envelopes_are_removed(
    inputs: str, outputs: str, expected: tuple[Any, Any]
) -> None:
    step = normalize_trace({"spans": [_oi_tool(inputs, outputs)]}).steps[0]
    assert (step.inputs, step.outputs) == expected


@pytest.mark.parametrize(
    "envelope",
    ['{"task": "find the year", "stream": false}', '{"user_msg": "find the year", "ctx": null}'],
)
def test_request_envelopes_give_the_request(envelope: str) -> None:
    span = {**_oi_tool(envelope, "x"), "name": "run"}
    span["attributes"] = {"openinference.span.kind": "AGENT", "input.value": envelope}
    assert normalize_trace({"spans": [span]}).input_text == "find the year"


def test_a_raw_envelope_does_not_block_the_request_in_another_span() -> None:
    path = EARLIER / "any-agent/LLAMA_INDEX_trace.json"
    if not path.is_file():  # pragma: no cover - the corpus ships with the tests
        pytest.skip("corpus missing")
    execution = normalize_trace(
        _json(REAL / "any-agent/LLAMA_INDEX_trace.openinference-fa7a2d64.json")
    )
    assert (execution.input_text or "").startswith("Use the tools to find what year")


# 7. JS SDK span lists, scopes, several traces, JSON-encoded spans


def _vercel_spans() -> list[dict[str, Any]]:
    return list(_json(REAL / "openinference/vercel_v6_generateText.json"))


def test_js_sdk_spans_keep_ids_and_hrtime_start_times() -> None:
    span = _vercel_spans()[0]
    execution = normalize_trace([span])
    step = execution.steps[0]
    assert step.span_id == "648be1dfd8e521b6"
    assert execution.execution_id == "700d5f98fe2420adcf6ab0822f7a323c"
    assert (step.start_ns, step.end_ns) == (1770131992241000000, 1770131994022541000)
    assert step.kind == "model_call"
    assert execution.input_text == "Write a haiku about programming."
    assert (execution.output_text or "").startswith("Lines of code align")


def test_vercel_tool_call_spans_are_tool_calls_with_arguments_and_result() -> None:
    root = _vercel_spans()[0]
    tool = {
        "name": "ai.toolCall",
        "spanContext": {"traceId": root["spanContext"]["traceId"], "spanId": "00000000000000aa"},
        "parentSpanId": root["spanContext"]["spanId"],
        "attributes": {
            "ai.operationId": "ai.toolCall",
            "ai.toolCall.name": "weather",
            "ai.toolCall.args": '{"city": "Oslo"}',
            "ai.toolCall.result": '{"temp": 3}',
        },
        "startTime": [1770131993, 0],
        "endTime": [1770131993, 5],
        "status": {"code": 0},
    }
    execution = normalize_trace([root, tool])
    call = execution.steps[1]
    assert (call.kind, call.name, call.parent_id) == ("tool_call", "weather", "648be1dfd8e521b6")
    assert (call.inputs, call.outputs) == ({"city": "Oslo"}, {"temp": 3})
    assert execution.framework == "vercel_ai"


def test_a_file_of_several_runs_is_refused_naming_their_trace_ids() -> None:
    with pytest.raises(TraceError) as raised:
        normalize_trace(_vercel_spans(), source="two.json")
    message = str(raised.value)
    assert message.startswith("two.json: holds 2 separate runs")
    assert "700d5f98fe2420adcf6ab0822f7a323c" in message
    assert "673a889f59126f8b4c90dce5a1f99368" in message


def test_a_setup_span_in_a_trace_of_its_own_is_part_of_the_run() -> None:
    execution = normalize_trace(_json(REAL / "strands-evals/autogen_live_spans.json"))
    assert execution.step_names()[0] == "create_agent math_assistant"
    assert _tools(execution) == ["calculate"]


def test_per_span_scope_names_the_framework() -> None:
    execution = normalize_trace(_json(REAL / "strands-evals/claude_live_spans.json"))
    assert execution.framework == "claude_agent_sdk"


def test_json_encoded_span_strings_read_like_the_span_objects() -> None:
    strings = normalize_trace(_json(REAL / "any-agent/OPENAI.sample-json-strings-daca21a6.json"))
    assert _tools(strings) == ["search_web", "write_file"]
    assert len(strings.execution_id) == 32
    assert all(step.start_ns > 1_600_000_000 * 10**9 for step in strings.steps)


def test_several_json_arrays_joined_by_commas_are_refused_as_not_json() -> None:
    text = (REAL / "monocle/teamsai_console_sample.json").read_text()
    with pytest.raises(TraceError, match=r"^teams: not a trace: not JSON"):
        parse_trace_text(text, source="teams")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2024-03-21T05:46:40Z", 1_711_000_000_000_000_000),
        ("2024-03-21T05:46:40.5+00:00 ", 1_711_000_000_500_000_000),  # trailing space
        (" 2024-03-21T05:46:40Z", 1_711_000_000_000_000_000),  # leading space
        ("2024-03-21T07:46:40+02:00", 1_711_000_000_000_000_000),
        ("2024-13-01T00:00:00Z", 0),  # no such month: no time, not an error
        ("²²²²-01-01T00:00:00Z", 0),  # digits to isdigit, not to a date
        ("2024-", 0),
    ],
)
def test_iso_timestamps_are_read_as_unix_nanoseconds(raw: str, expected: int) -> None:
    assert to_nanos(raw) == expected
