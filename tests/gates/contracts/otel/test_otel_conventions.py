"""Hand-made small traces: each framework convention, attribute type, container and rule."""

from __future__ import annotations

import json
from typing import Any

import pytest

from canon.gates.contracts.execution import Execution
from canon.gates.contracts.otel import normalize_trace, parse_trace_text


def kv(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    """OTLP KV-list attributes from a plain mapping (strings, ints as strings, bools)."""
    out = []
    for key, value in attrs.items():
        if isinstance(value, bool):
            encoded: dict[str, Any] = {"boolValue": value}
        elif isinstance(value, int):
            encoded = {"intValue": str(value)}
        elif isinstance(value, float):
            encoded = {"doubleValue": value}
        else:
            encoded = {"stringValue": value}
        out.append({"key": key, "value": encoded})
    return out


def span(
    name: str,
    span_id: str,
    parent: str = "",
    start: int = 1,
    attrs: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One OTLP JSON span; ``start`` is in seconds after a fixed epoch."""
    begin = 1_711_000_000_000_000_000 + start * 1_000_000_000
    return {
        "traceId": "ab" * 16,
        "spanId": span_id,
        "parentSpanId": parent,
        "name": name,
        "startTimeUnixNano": str(begin),
        "endTimeUnixNano": str(begin + 500_000_000),
        "status": {"code": 1},
        "attributes": kv(attrs or {}),
        **extra,
    }


def otlp(*spans: dict[str, Any], resource: dict[str, Any] | None = None) -> dict[str, Any]:
    """An OTLP JSON export holding ``spans`` in one scope."""
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": kv(resource or {"service.name": "svc"})},
                "scopeSpans": [{"scope": {"name": "test"}, "spans": list(spans)}],
            }
        ]
    }


def one_step(name: str, attrs: dict[str, Any], **extra: Any) -> Execution:
    return normalize_trace(otlp(span(name, "00000000000000a1", attrs=attrs, **extra)))


@pytest.mark.parametrize(
    ("name", "attrs", "tool"),
    [
        ("execute_tool lookup", {"gen_ai.operation.name": "execute_tool"}, "lookup"),
        ("anything", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "a"}, "a"),
        ("running tool", {"gen_ai.tool.name": "fetch"}, "fetch"),
        ("running tool: fetch", {}, "fetch"),
        ("search", {"openinference.span.kind": "TOOL", "tool.name": "kb_search"}, "kb_search"),
        ("search", {"openinference.span.kind": "tool"}, "search"),
        ("x", {"traceloop.span.kind": "tool", "traceloop.entity.name": "geo"}, "geo"),
        ("get_weather.tool", {"traceloop.workflow.name": "w"}, "get_weather"),
        ("claude_code.tool", {"tool_name": "Bash"}, "Bash"),
        ("execute_tool   spaced", {}, "spaced"),
    ],
)
def test_tool_conventions_name_the_step_after_the_tool(
    name: str, attrs: dict[str, Any], tool: str
) -> None:
    step = one_step(name, attrs).steps[0]
    assert step.kind == "tool_call"
    assert step.name == tool


@pytest.mark.parametrize(
    ("name", "attrs", "kind"),
    [
        ("chat gpt-4o", {"gen_ai.operation.name": "chat"}, "model_call"),
        ("call_llm m", {"gen_ai.operation.name": "call_llm"}, "model_call"),
        ("openai.chat", {"llm.request.type": "chat"}, "model_call"),
        ("llm", {"openinference.span.kind": "LLM"}, "model_call"),
        ("ChatBedrock.chat", {}, "model_call"),
        ("claude_code.llm_request", {}, "model_call"),
        ("gen", {"gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 3}, "model_call"),
        ("invoke_agent a", {"gen_ai.operation.name": "invoke_agent"}, "agent"),
        ("agent run", {}, "agent"),
        ("wf", {"traceloop.span.kind": "workflow"}, "agent"),
        ("kb", {"aws.bedrock.knowledge_base.id": "KB1"}, "retrieval"),
        ("r", {"openinference.span.kind": "RETRIEVER"}, "retrieval"),
        ("request human review", {}, "human_review"),
        ("h", {"gen_ai.operation.name": "human_approval"}, "human_review"),
        ("execute_event_loop_cycle", {}, "custom"),
        ("running tools", {}, "custom"),
        ("claude_code.tool.execution", {}, "custom"),
        ("chat", {"gen_ai.operation.name": "chat", "gen_ai.tool.name": "x"}, "model_call"),
    ],
)
def test_non_tool_spans_are_classified_and_keep_their_span_name(
    name: str, attrs: dict[str, Any], kind: str
) -> None:
    step = one_step(name, attrs).steps[0]
    assert step.kind == kind
    assert step.name == name


def test_knowledge_base_id_becomes_a_data_source() -> None:
    step = one_step("retrieve", {"aws.bedrock.knowledge_base.id": "KB-7"}).steps[0]
    assert [(s.name, s.type) for s in step.sources] == [("KB-7", "knowledge_base")]


@pytest.mark.parametrize(
    ("attrs", "expected"),
    [
        ({"gen_ai.tool.call.result": '{"ok": true}'}, {"ok": True}),
        ({"tool_response": '{"ok": 1}'}, {"ok": 1}),
        ({"output.value": '{"a": [1, 2]}'}, {"a": [1, 2]}),
        ({"gen_ai.output": '"None"'}, "None"),
        ({"gen_ai.output": "plain words"}, "plain words"),
        ({"gen_ai.output": "42"}, 42),
        (
            {
                "gcp.vertex.agent.tool_response": (
                    '{"content":[{"type":"text","text":"{\\"k\\":2}"}]}'
                )
            },
            {"k": 2},
        ),
        (
            {
                "traceloop.entity.output": json.dumps(
                    {"output": {"lc": 1, "kwargs": {"content": '{"x": 3}'}}}
                )
            },
            {"x": 3},
        ),
        ({"tool_result": '[{"text": "{\\"y\\": 4}"}]'}, {"y": 4}),
    ],
)
def test_tool_results_are_parsed_and_unwrapped_per_framework(
    attrs: dict[str, Any], expected: object
) -> None:
    step = one_step("execute_tool t", attrs).steps[0]
    assert step.outputs == expected


@pytest.mark.parametrize(
    ("attrs", "expected"),
    [
        ({"gen_ai.tool.call.arguments": '{"q": "x"}'}, {"q": "x"}),
        ({"gen_ai.tool.args": '{"q": 1}'}, {"q": 1}),
        ({"tool_arguments": '{"q": [1]}'}, {"q": [1]}),
        ({"input.value": "free text"}, "free text"),
        (
            {"gen_ai.tool.call.arguments": json.dumps({"input_str": "s", "inputs": {"q": 2}})},
            {"q": 2},
        ),
    ],
)
def test_tool_arguments_are_parsed_per_framework(attrs: dict[str, Any], expected: object) -> None:
    assert one_step("execute_tool t", attrs).steps[0].inputs == expected


def test_older_strands_tool_events_give_arguments_and_result() -> None:
    events = [
        {"name": "gen_ai.tool.message", "attributes": kv({"content": '{"id": 5}'})},
        {
            "name": "gen_ai.choice",
            "attributes": kv({"message": '[{"text": "{\\"found\\": true}"}]'}),
        },
    ]
    step = one_step("execute_tool f", {}, events=events).steps[0]
    assert step.inputs == {"id": 5}
    assert step.outputs == {"found": True}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"stringValue": "s"}, "s"),
        ({"intValue": "9007199254740993"}, 9007199254740993),
        ({"intValue": 7}, 7),
        ({"doubleValue": 1.5}, 1.5),
        ({"doubleValue": "2.5"}, 2.5),
        ({"boolValue": True}, True),
        ({"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": "2"}]}}, ["a", 2]),
        ({"kvlistValue": {"values": [{"key": "k", "value": {"boolValue": False}}]}}, {"k": False}),
        ({"bytesValue": "AAE="}, "AAE="),
        ({"arrayValue": {}}, []),
        ({}, None),
    ],
)
def test_every_otlp_attribute_type_is_decoded(value: dict[str, Any], expected: object) -> None:
    raw = otlp(span("s", "00000000000000a1"))
    raw["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] = [
        {"key": "k", "value": value}
    ]
    assert normalize_trace(raw).steps[0].attributes["k"] == expected


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ({"code": 2}, "error"),
        ({"code": "STATUS_CODE_ERROR"}, "error"),
        ({"code": "ERROR"}, "error"),
        ({"code": 1}, "ok"),
        ({"code": "STATUS_CODE_OK"}, "ok"),
        ({"code": 0}, "unset"),
        ({"status_code": "error"}, "error"),
        ({}, "unset"),
        ("garbage", "unset"),
    ],
)
def test_string_and_integer_status_codes(status: object, expected: str) -> None:
    raw = otlp(span("s", "00000000000000a1", status=status))
    raw["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["status"] = status
    assert normalize_trace(raw).steps[0].status == expected


def test_steps_follow_start_time_with_file_order_breaking_ties() -> None:
    raw = otlp(
        span("late", "00000000000000a3", start=9),
        span("tie_first", "00000000000000a1", start=2),
        span("tie_second", "00000000000000a2", start=2),
    )
    assert normalize_trace(raw).step_names() == ("tie_first", "tie_second", "late")


def test_single_span_trace_keeps_its_only_step() -> None:
    execution = one_step("execute_tool only", {})
    assert execution.step_names() == ("only",)


def test_partial_trace_keeps_every_span_and_reads_the_largest_subtree() -> None:
    lost_root = "00000000000000ff"
    raw = otlp(
        span("execute_tool early", "00000000000000a1", lost_root, start=1),
        span("cycle", "00000000000000a2", lost_root, start=2),
        span(
            "chat",
            "00000000000000a3",
            "00000000000000a2",
            start=3,
            attrs={"gen_ai.operation.name": "chat", "gen_ai.output.messages": "[]"},
        ),
    )
    assert normalize_trace(raw).step_names() == ("early", "cycle", "chat")


def test_several_parentless_spans_prefer_the_one_with_the_work_under_it() -> None:
    raw = otlp(
        span("health", "00000000000000a0", start=0, attrs={"gen_ai.input.messages": "x"}),
        span(
            "invoke_agent a",
            "00000000000000a1",
            start=1,
            attrs={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.input.messages": '[{"role": "user", "content": "the real request"}]',
            },
        ),
        span("execute_tool t", "00000000000000a2", "00000000000000a1", start=2),
    )
    assert normalize_trace(raw).input_text == "the real request"


def test_request_is_the_latest_user_turn_of_a_multi_turn_history() -> None:
    history = [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "parts": [{"type": "text", "content": "current question"}]},
    ]
    execution = one_step("invoke_agent", {"gen_ai.input.messages": json.dumps(history)})
    assert execution.input_text == "current question"


@pytest.mark.parametrize("answer", ["42", "true", "[1]", '{"decision": "approve"}'])
def test_answers_that_are_valid_json_are_kept_as_text(answer: str) -> None:
    execution = one_step("agent run", {"final_result": answer})
    assert execution.output_text == answer
    execution = one_step("query", {"openinference.span.kind": "AGENT", "output.value": answer})
    assert execution.output_text == answer


def test_answer_skips_assistant_messages_that_only_call_tools() -> None:
    messages = [
        {"role": "assistant", "parts": [{"type": "text", "content": "Done: approved."}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "name": "x"}]},
    ]
    execution = one_step("invoke_agent", {"gen_ai.output.messages": json.dumps(messages)})
    assert execution.output_text == "Done: approved."


def test_answer_falls_back_to_the_latest_model_call() -> None:
    raw = otlp(
        span("root", "00000000000000a1", start=0),
        span(
            "chat",
            "00000000000000a2",
            "00000000000000a1",
            start=1,
            attrs={"gen_ai.operation.name": "chat", "gen_ai.completion.0.content": "early"},
        ),
        span(
            "chat",
            "00000000000000a3",
            "00000000000000a1",
            start=2,
            attrs={
                "gen_ai.operation.name": "chat",
                "gen_ai.prompt.0.role": "user",
                "gen_ai.prompt.0.content": "asked",
                "gen_ai.completion.0.content": "final words",
            },
        ),
    )
    execution = normalize_trace(raw)
    assert execution.output_text == "final words"
    assert execution.input_text == "asked"


def test_openinference_flattened_messages_give_request_and_answer() -> None:
    attrs = {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": "be brief",
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": "hello?",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "hi.",
    }
    execution = one_step("llm", attrs)
    assert (execution.input_text, execution.output_text) == ("hello?", "hi.")


def test_claude_code_interaction_prompt_is_the_request() -> None:
    execution = one_step("claude_code.interaction", {"user_prompt": "fix the bug"})
    assert execution.input_text == "fix the bug"
    assert execution.framework == "claude_code"
    assert execution.steps[0].kind == "agent"


def test_metadata_overlay_wins_over_resource_attributes() -> None:
    raw = otlp(span("s", "00000000000000a1"), resource={"service.name": "svc", "risk": 85})
    execution = normalize_trace(raw, metadata={"service.name": "cli", "tier": "gold"})
    assert execution.metadata == {"service.name": "cli", "risk": 85, "tier": "gold"}


def test_snake_case_otlp_container_is_read() -> None:
    raw = {
        "resource_spans": [
            {"scope_spans": [{"spans": [span("execute_tool snake", "00000000000000a1")]}]}
        ]
    }
    assert normalize_trace(raw).step_names() == ("snake",)


def test_sdk_span_list_with_hex_ids_and_iso_times() -> None:
    spans = [
        {
            "name": "child",
            "context": {"trace_id": "0x" + "c" * 32, "span_id": "0x00000000000000b2"},
            "parent_id": "0x00000000000000b1",
            "start_time": "2024-05-01T10:00:02.000000Z",
            "end_time": "2024-05-01T10:00:03.000000Z",
            "status": {"status_code": "ERROR"},
            "attributes": {"gen_ai.tool.name": "t"},
            "resource": {"attributes": {"service.name": "sdk"}},
        },
        {
            "name": "root",
            "context": {"trace_id": "0x" + "c" * 32, "span_id": "0x00000000000000b1"},
            "parent_id": None,
            "start_time": "2024-05-01T10:00:01.000000Z",
            "end_time": "2024-05-01T10:00:04.000000Z",
            "status": {"status_code": "UNSET"},
            "attributes": {},
        },
    ]
    execution = normalize_trace(spans)
    assert execution.step_names() == ("root", "t")
    assert execution.steps[1].status == "error"
    assert execution.steps[1].parent_id == "00000000000000b1"
    assert execution.execution_id == "c" * 32
    assert execution.metadata["service.name"] == "sdk"
    assert execution.steps[0].start_ns == 1_714_557_601_000_000_000


def test_jaeger_single_trace_object_with_follows_from_reference() -> None:
    raw = {
        "traceID": "d" * 32,
        "spans": [
            {
                "traceID": "d" * 32,
                "spanID": "00000000000000c2",
                "operationName": "execute_tool ping",
                "references": [{"refType": "FOLLOWS_FROM", "spanID": "00000000000000c1"}],
                "startTime": 1_700_000_000_000_100,
                "duration": 50,
                "tags": [{"key": "gen_ai.tool.call.result", "type": "string", "value": "{}"}],
                "processID": "p1",
            },
            {
                "traceID": "d" * 32,
                "spanID": "00000000000000c1",
                "operationName": "root",
                "references": [],
                "startTime": 1_700_000_000_000_000,
                "duration": 500,
                "tags": [{"key": "n", "type": "int64", "value": "12"}],
                "processID": "p1",
            },
        ],
        "processes": {"p1": {"serviceName": "jaeger-svc", "tags": []}},
    }
    execution = normalize_trace(raw)
    assert execution.step_names() == ("root", "ping")
    assert execution.steps[0].attributes["n"] == 12
    assert execution.steps[0].end_ns - execution.steps[0].start_ns == 500_000
    assert execution.steps[1].parent_id == "00000000000000c1"
    assert execution.metadata["service.name"] == "jaeger-svc"


def test_json_lines_of_single_spans_are_one_trace() -> None:
    lines = "\n".join(
        json.dumps(span(name, f"00000000000000a{i}", start=i))
        for i, name in enumerate(["execute_tool a", "execute_tool b"], start=1)
    )
    assert normalize_trace(parse_trace_text(lines)).step_names() == ("a", "b")


def test_framework_detection_prefers_framework_marks_over_instrumentation() -> None:
    raw = otlp(
        span("openai.chat", "00000000000000a1", attrs={"llm.request.type": "chat"}),
        span("call_llm", "00000000000000a2", attrs={"gen_ai.system": "gcp.vertex.agent"}),
    )
    assert normalize_trace(raw).framework == "google_adk"
    assert one_step("x", {"openinference.span.kind": "CHAIN"}).framework == "openinference"
    assert one_step("x", {"foo": "bar"}).framework == "unknown"


def test_tool_status_attribute_marks_an_unset_span_as_failed() -> None:
    raw = otlp(span("execute_tool t", "00000000000000a1", attrs={"gen_ai.tool.status": "error"}))
    raw["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["status"] = {}
    assert normalize_trace(raw).steps[0].status == "error"
