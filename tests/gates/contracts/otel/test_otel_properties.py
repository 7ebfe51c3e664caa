"""Property tests: random span structures give an Execution or a TraceError, nothing else."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from canon.gates.contracts.execution import Execution
from canon.gates.contracts.otel import TraceError, normalize_trace, parse_trace_text

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
# JSON text inside attributes: message lists, tool results, junk
json_texts = st.one_of(
    st.sampled_from(
        [
            '[{"role": "user", "content": "hi"}]',
            '[{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}]',
            '{"output": {"lc": 1, "kwargs": {"content": "{\\"a\\": 1}"}}}',
            '{"content": [{"type": "text", "text": "[1]"}]}',
            '[{"text": "{}"}]',
            "42",
            "null",
            "[",
            '"x"',
            '{"messages": [["user", "q"]]}',
        ]
    ),
    st.text(max_size=20),
)
any_values = st.one_of(
    st.builds(lambda v: {"stringValue": v}, st.one_of(json_texts, scalars)),
    st.builds(lambda v: {"intValue": v}, st.one_of(st.integers(), st.text(max_size=5))),
    st.builds(lambda v: {"doubleValue": v}, st.one_of(st.floats(), st.text(max_size=5))),
    st.builds(lambda v: {"boolValue": v}, scalars),
    st.builds(lambda v: {"arrayValue": {"values": v}}, st.lists(scalars, max_size=3)),
    st.builds(lambda v: {"kvlistValue": v}, json_values),
    st.builds(lambda v: {"bytesValue": v}, st.text(max_size=8)),
    json_values,
)
attribute_keys = st.sampled_from(
    [
        "gen_ai.operation.name",
        "gen_ai.tool.name",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.output",
        "tool_response",
        "output.value",
        "input.value",
        "openinference.span.kind",
        "traceloop.span.kind",
        "traceloop.entity.output",
        "final_result",
        "gen_ai.prompt.0.role",
        "gen_ai.prompt.0.content",
        "gen_ai.completion.0.content",
        "aws.bedrock.knowledge_base.id",
        "gcp.vertex.agent.llm_response",
        "other",
    ]
)
kv_lists = st.lists(
    st.one_of(st.fixed_dictionaries({"key": attribute_keys, "value": any_values}), json_values),
    max_size=6,
)
ids = st.one_of(st.sampled_from(["", "a1", "a2", "a3", "0x00a1", "ff"]), st.integers(), scalars)
names = st.one_of(
    st.sampled_from(["execute_tool x", "chat", "running tool", "agent run", "claude_code.tool"]),
    scalars,
)
times = st.one_of(st.integers(min_value=0, max_value=2**64), st.text(max_size=12), scalars)
events = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {"name": st.sampled_from(["gen_ai.choice", "x"]), "attributes": kv_lists}
        ),
        json_values,
    ),
    max_size=3,
)
spans = st.fixed_dictionaries(
    {},
    optional={
        "traceId": ids,
        "spanId": ids,
        "parentSpanId": ids,
        "name": names,
        "startTimeUnixNano": times,
        "endTimeUnixNano": times,
        "status": st.one_of(st.fixed_dictionaries({"code": scalars}), scalars),
        "attributes": st.one_of(kv_lists, json_values),
        "events": st.one_of(events, json_values),
        "context": st.one_of(st.fixed_dictionaries({"span_id": ids}), json_values),
        "parent": st.one_of(st.fixed_dictionaries({"span_id": ids}), json_values),
    },
)
span_lists = st.lists(st.one_of(spans, scalars), max_size=8)
containers = st.one_of(
    span_lists,
    st.builds(lambda s: {"spans": s}, span_lists),
    st.builds(
        lambda s, r: {
            "resourceSpans": [{"resource": {"attributes": r}, "scopeSpans": [{"spans": s}]}]
        },
        span_lists,
        kv_lists,
    ),
    st.builds(lambda s: {"batches": [{"instrumentationLibrarySpans": [{"spans": s}]}]}, span_lists),
    st.builds(
        lambda s: {"data": [{"spans": s, "processes": {"p": {"serviceName": "x"}}}]}, span_lists
    ),
    json_values,
)


def _check(raw: Any) -> Execution | None:
    try:
        execution = normalize_trace(raw, source="prop")
    except TraceError as error:
        assert str(error).startswith("prop: ")
        return None
    assert isinstance(execution, Execution)
    assert execution.steps, "an execution always has at least one step"
    starts = [step.start_ns for step in execution.steps]
    assert starts == sorted(starts)
    assert all(isinstance(step.name, str) and step.name for step in execution.steps)
    assert execution.input_text is None or isinstance(execution.input_text, str)
    assert execution.output_text is None or isinstance(execution.output_text, str)
    return execution


@SETTINGS
@given(containers)
def test_random_containers_give_an_execution_or_a_trace_error(raw: Any) -> None:
    _check(raw)


@SETTINGS
@given(st.lists(spans, min_size=1, max_size=8))
def test_every_named_span_dict_in_an_otlp_export_becomes_one_step(span_dicts: list[Any]) -> None:
    for at, span in enumerate(span_dicts):  # one trace, every span named and with an id
        span.pop("traceId", None)
        span["name"] = f"s{at}"
        span["spanId"] = f"{at + 1:016x}"
    raw = {"resourceSpans": [{"scopeSpans": [{"spans": span_dicts}]}]}
    execution = _check(raw)
    assert execution is not None
    assert len(execution.steps) == len(span_dicts)


@SETTINGS
@given(st.lists(spans, min_size=1, max_size=8))
def test_a_span_list_without_any_named_span_is_not_a_trace(span_dicts: list[Any]) -> None:
    for span in span_dicts:
        span.pop("name", None)
    raw = {"resourceSpans": [{"scopeSpans": [{"spans": span_dicts}]}]}
    try:
        normalize_trace(raw, source="prop")
    except TraceError as error:
        assert "not a trace" in str(error)
    else:
        raise AssertionError("a list of nameless objects was read as a trace")


@SETTINGS
@given(st.text(max_size=60))
def test_random_text_parses_or_raises_a_trace_error(text: str) -> None:
    try:
        parsed = parse_trace_text(text, source="txt")
    except TraceError:
        return
    _check(parsed)


@SETTINGS
@given(st.integers(min_value=1, max_value=60))
def test_deeply_nested_payloads_do_not_crash(depth: int) -> None:
    nested = "[" * depth + "]" * depth
    messages = '{"content": ' * depth + '"x"' + "}" * depth
    attrs = [
        {"key": "gen_ai.tool.call.result", "value": {"stringValue": nested}},
        {"key": "gen_ai.output.messages", "value": {"stringValue": messages}},
    ]
    span = {"spanId": "a1", "name": "execute_tool t", "startTimeUnixNano": "1", "attributes": attrs}
    assert _check({"spans": [span]}) is not None
