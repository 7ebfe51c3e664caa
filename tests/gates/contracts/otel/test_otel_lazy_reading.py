"""The fast OTLP road (lazy attributes, lazy tool payloads) reads spans like the full decoders."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from canon.gates.contracts.execution import NO_PAYLOAD, Step
from canon.gates.contracts.otel import normalize_trace
from canon.gates.contracts.otel.attributes import KVAttributes
from canon.gates.contracts.otel.spans import collect_spans
from canon.gates.contracts.otel.steps import as_nanos, start_column, step_from_raw
from canon.gates.contracts.otel.tree import (
    in_start_order,
    nested_model_calls,
    repeated_tool_calls,
)
from canon.gates.contracts.otel.values import decode_kv_list, to_nanos

CORPUS = Path(__file__).resolve().parents[3] / "corpus" / "traces"
CORPUS_FILES = sorted(str(path.relative_to(CORPUS)) for path in CORPUS.glob("*/*.json"))
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _view(step: Step) -> str:
    # repr, so NaN attribute values (never equal to themselves) still compare
    return repr(
        (
            step.name,
            step.kind,
            step.span_id,
            step.parent_id,
            step.start_ns,
            step.end_ns,
            step.status,
            step.sources,
            dict(step.attributes),
            step.inputs,
            step.outputs,
        )
    )


def _eager_views(raw: object) -> list[str]:
    """Every span decoded at once and classified by the full rules, in start order."""
    spans = in_start_order(collect_spans(raw, source="t").spans)
    steps = [step_from_raw(span) for span in spans]
    repeats = repeated_tool_calls(
        [step.name for step in steps],
        [step.kind for step in steps],
        [step.span_id for step in steps],
        [step.parent_id for step in steps],
        lambda at: (steps[at].start_ns, steps[at].end_ns),
    )
    for at in repeats:  # one call recorded twice counts once, on both roads
        steps[at] = steps[at]._replace(kind="custom", payload=NO_PAYLOAD)
    kinds = [step.kind for step in steps]
    ids = [step.span_id for step in steps]
    for at in nested_model_calls(kinds, ids, [step.parent_id for step in steps]):
        steps[at] = steps[at]._replace(kind="custom", payload=NO_PAYLOAD)
    return [_view(step) for step in steps]


def _otlp(spans: list[Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"scope": {"name": "s"}, "spans": spans}]}]}


def _span(span_id: str, attributes: object, **extra: Any) -> dict[str, Any]:
    return {
        "spanId": span_id,
        "name": extra.pop("name", "execute_tool lookup"),
        "startTimeUnixNano": extra.pop("start", "1711000000000000000"),
        "attributes": attributes,
        **extra,
    }


def _attr(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


@pytest.mark.parametrize("relative", CORPUS_FILES)
def test_corpus_steps_from_the_fast_road_equal_the_fully_decoded_steps(relative: str) -> None:
    raw = json.loads((CORPUS / relative).read_text())
    assert [_view(step) for step in normalize_trace(raw).steps] == _eager_views(raw)


def test_lazy_attributes_read_like_the_eager_decoder() -> None:
    items = [
        _attr("a", "x"),
        {"key": "n", "value": {"intValue": "12"}},
        {"key": "a", "value": {"stringValue": "a duplicate loses"}},
        {"key": "kv", "value": {"kvlistValue": {"values": [_attr("inner", "y")]}}},
    ]
    attrs = KVAttributes(items)
    assert dict(attrs) == decode_kv_list(items) == {"a": "x", "n": 12, "kv": {"inner": "y"}}
    assert attrs["n"] == 12 and attrs.get("missing", "d") == "d" and "kv" in attrs
    assert len(attrs) == 3 and list(attrs) == ["a", "n", "kv"]
    assert attrs == decode_kv_list(items)
    assert "'a': 'x'" in repr(attrs) and "duplicate" not in repr(attrs)


def test_malformed_attribute_items_are_skipped_as_the_eager_decoder_skips_them() -> None:
    items = [_attr("a", "x"), "junk", {"key": 5, "value": {}}, {"key": "b"}, {"value": {}}]
    attrs = KVAttributes(items)
    assert dict(attrs) == decode_kv_list(items) == {"a": "x", "b": None}
    assert 5 not in attrs


def test_a_tool_result_that_is_not_json_stays_the_text_the_trace_wrote() -> None:
    attributes = [
        _attr("gen_ai.operation.name", "execute_tool"),
        _attr("gen_ai.tool.name", "lookup"),
        _attr("gen_ai.tool.call.arguments", '{"id": 5}'),
        _attr("gen_ai.tool.call.result", "{not json"),
    ]
    step = normalize_trace(_otlp([_span("a1", attributes)])).steps[0]
    assert (step.name, step.kind) == ("lookup", "tool_call")
    assert step.inputs == {"id": 5}
    assert step.outputs == "{not json"


def test_a_payload_nested_past_the_recursion_limit_stays_text_and_never_raises() -> None:
    nested = "[" * 200_000 + "]" * 200_000
    attributes = [
        _attr("gen_ai.operation.name", "execute_tool"),
        _attr("gen_ai.tool.name", "lookup"),
        _attr("gen_ai.tool.call.result", nested),
    ]
    step = normalize_trace(_otlp([_span("a1", attributes)])).steps[0]
    assert step.kind == "tool_call"
    assert (step.inputs, step.outputs) == (None, nested)


def test_tool_payloads_are_parsed_once_and_then_kept() -> None:
    attributes = [
        _attr("gen_ai.operation.name", "execute_tool"),
        _attr("gen_ai.tool.name", "lookup"),
        _attr("gen_ai.tool.call.result", '{"rows": [1, 2]}'),
    ]
    step = normalize_trace(_otlp([_span("a1", attributes)])).steps[0]
    assert step.outputs is step.outputs
    assert step.outputs == {"rows": [1, 2]}


def test_a_tool_status_or_a_knowledge_base_sends_a_span_down_the_full_rules() -> None:
    failed = [
        _attr("gen_ai.operation.name", "execute_tool"),
        _attr("gen_ai.tool.name", "lookup"),
        _attr("gen_ai.tool.status", "error"),
    ]
    retrieval = [
        _attr("gen_ai.operation.name", "chat"),
        _attr("aws.bedrock.knowledge_base.id", "kb-1"),
    ]
    raw = _otlp(
        [_span("a1", failed), _span("a2", retrieval, name="chat", start="1711000000000000001")]
    )
    first, second = normalize_trace(raw).steps
    assert (first.kind, first.status) == ("tool_call", "error")
    assert (second.kind, [source.name for source in second.sources]) == ("model_call", ["kb-1"])
    assert [_view(step) for step in normalize_trace(raw).steps] == _eager_views(raw)


def test_a_step_built_by_hand_is_immutable_comparable_and_copyable() -> None:
    step = Step(
        "check", "tool_call", status="ok", inputs={"a": 1}, outputs=[1], attributes={"k": 1}
    )
    assert (step.inputs, step.outputs, step.attributes) == ({"a": 1}, [1], {"k": 1})
    assert step == Step(
        "check", "tool_call", status="ok", inputs={"a": 1}, outputs=[1], attributes={"k": 1}
    )
    assert step != Step("check", "tool_call", status="ok", inputs={"a": 2}, attributes={"k": 1})
    with pytest.raises(AttributeError):
        step.name = "other"  # type: ignore[misc]
    assert copy.copy(step) == step
    assert pickle.loads(pickle.dumps(step)) == step
    assert "inputs={'a': 1}" in repr(step)


def test_a_normalized_step_survives_pickling_with_its_payload_and_attributes() -> None:
    attributes = [
        _attr("gen_ai.operation.name", "execute_tool"),
        _attr("gen_ai.tool.name", "lookup"),
        _attr("gen_ai.tool.call.result", '{"ok": true}'),
    ]
    step = normalize_trace(_otlp([_span("a1", attributes)])).steps[0]
    restored = pickle.loads(pickle.dumps(step))
    assert restored == step
    assert restored.outputs == {"ok": True}
    assert restored.attributes["gen_ai.tool.name"] == "lookup"


# Random OTLP spans: the fast road must agree with the full decoders field by field.
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 2**64), st.floats(), st.text(max_size=6)
)
values = st.one_of(
    st.builds(
        lambda v: {"stringValue": v},
        st.one_of(
            st.sampled_from(
                ["chat", "execute_tool", "invoke_agent", "lookup", " ", '{"a": 1}', "[1]"]
            ),
            scalars,
        ),
    ),
    st.builds(lambda v: {"intValue": v}, st.one_of(st.integers(), st.text(max_size=4))),
    st.builds(lambda v: {"boolValue": v}, scalars),
    st.builds(lambda v: {"bytesValue": v}, st.text(max_size=4)),
    st.builds(lambda v: {"arrayValue": {"values": v}}, st.lists(scalars, max_size=2)),
    scalars,
)
keys = st.one_of(
    st.sampled_from(
        [
            "gen_ai.operation.name",
            "gen_ai.tool.name",
            "gen_ai.tool.status",
            "gen_ai.tool.call.result",
            "gen_ai.request.model",
            "gen_ai.usage.input_tokens",
            "openinference.span.kind",
            "tool.name",
            "aws.bedrock.knowledge_base.id",
            "other",
        ]
    ),
    st.integers(0, 3),
)
items = st.one_of(
    st.fixed_dictionaries({"key": keys, "value": values}),
    st.fixed_dictionaries({"key": keys}),
    scalars,
)
attribute_lists = st.one_of(
    st.lists(items, max_size=5), scalars, st.dictionaries(st.text(max_size=3), scalars)
)
span_ids = st.one_of(
    st.sampled_from(["a1", "a2", "0x0b", "AB12", "", "0", "00000000000000c3"]),
    st.integers(-1, 2**40),
    st.none(),
)
times = st.one_of(
    st.sampled_from(
        [
            "1711000000000000000",
            "1711000000000000005",
            "1700000000000000009",
            "17110000000000000000",
            "0171100000000000000",
            "12",
        ]
    ),
    st.integers(0, 2**64),
    st.text(max_size=4),
    st.none(),
)
random_spans = st.fixed_dictionaries(
    {
        "spanId": span_ids,
        "startTimeUnixNano": times,
        "attributes": attribute_lists,
        "name": st.one_of(st.sampled_from(["chat", "execute_tool x", "agent run", "s"]), scalars),
    },
    optional={
        "parentSpanId": span_ids,
        "endTimeUnixNano": times,
        "status": st.one_of(st.fixed_dictionaries({"code": scalars}), scalars),
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(random_spans, min_size=1, max_size=6))
def test_random_otlp_spans_give_the_same_steps_on_both_roads(spans: list[dict[str, Any]]) -> None:
    raw = _otlp(spans)
    assert [_view(step) for step in normalize_trace(raw).steps] == _eager_views(raw)


@SETTINGS
@given(st.lists(items, max_size=6))
def test_random_attribute_lists_read_the_same_lazily_and_eagerly(raw_items: list[Any]) -> None:
    lazy = KVAttributes(raw_items)
    eager = decode_kv_list(raw_items)
    assert repr(dict(lazy)) == repr(eager)
    assert list(lazy) == list(eager)
    assert all(key in lazy for key in eager)


def test_a_timestamp_of_non_ascii_digits_reads_as_zero_instead_of_crashing() -> None:
    step = normalize_trace(_otlp([_span("a1", [], start="²")])).steps[0]
    assert step.start_ns == 0


def test_start_times_kept_as_digit_strings_order_and_build_steps_as_numbers() -> None:
    starts = ["1711000000000000009", "1711000000000000001", "1799999999999999999"]
    spans = [_span(f"a{at}", [], start=start) for at, start in enumerate(starts)]
    steps = normalize_trace(_otlp(spans)).steps
    assert [step.start_ns for step in steps] == sorted(map(int, starts))
    assert [step.span_id for step in steps] == ["a1", "a0", "a2"]


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        (["1711000000000000009", "1711000000000000001"], True),
        (["171100000000000000", "999999999999999999"], True),  # 18 digits: still nanoseconds
        (["1711000000000000009", "17110000000000000010"], False),  # widths differ
        (["0711000000000000009", "1711000000000000001"], False),  # a leading zero
        (["17110000000000000", "17110000000000001"], False),  # microseconds: scaled
        (["1711000000000000009", 1711000000000000001], False),
        (["171100000000000000²", "1711000000000000001"], False),
    ],
)
def test_start_column_keeps_only_digit_strings_that_sort_as_nanoseconds(
    raw: list[Any], kept: bool
) -> None:
    column = start_column(list(raw))
    assert (column == raw and all(isinstance(value, str) for value in column)) is kept
    assert list(map(as_nanos, column)) == [to_nanos(value) for value in raw]


# Spans as GenAI instrumentations lay them out: the operation first (then, for a tool call,
# its name), which the fast road reads for the whole run at once; odd values among them
# send the run (or the span) to the span-by-span and general roads, with the same steps.
operation_values = st.one_of(
    st.builds(
        lambda v: {"stringValue": v},
        st.one_of(st.sampled_from(["chat", "execute_tool", "invoke_agent", "lookup"]), scalars),
    ),
    values,
)
tool_values = st.one_of(
    st.builds(lambda v: {"stringValue": v}, st.sampled_from(["lookup", " ", "", " pay "])),
    values,
)
leading_attributes = st.builds(
    lambda operation, tool, rest: (
        [{"key": "gen_ai.operation.name", "value": operation}]
        + ([{"key": "gen_ai.tool.name", "value": tool}] if tool is not None else [])
        + rest
    ),
    operation_values,
    st.one_of(st.none(), tool_values),
    st.lists(items, max_size=2),
)
leading_spans = st.fixed_dictionaries(
    {
        "spanId": span_ids,
        "startTimeUnixNano": times,
        "attributes": leading_attributes,
        "name": st.sampled_from(["chat", "execute_tool x", "agent run"]),
    },
    optional={"status": st.fixed_dictionaries({"code": st.sampled_from([0, 1, 2])})},
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(leading_spans, min_size=1, max_size=6))
def test_spans_led_by_their_genai_operation_give_the_same_steps_on_both_roads(
    spans: list[dict[str, Any]],
) -> None:
    raw = _otlp(spans)
    assert [_view(step) for step in normalize_trace(raw).steps] == _eager_views(raw)


def test_a_run_of_genai_spans_read_at_once_names_its_tool_calls_and_keeps_odd_ones() -> None:
    def operation(op: str, *rest: dict[str, Any]) -> list[dict[str, Any]]:
        return [_attr("gen_ai.operation.name", op), *rest]

    spans = [
        _span("a1", operation("invoke_agent"), name="agent", status={"code": 1}),
        _span(
            "a2", operation("execute_tool", _attr("gen_ai.tool.name", " pay ")), status={"code": 1}
        ),
        _span("a3", operation("execute_tool", _attr("gen_ai.tool.name", "")), status={"code": 1}),
        _span("a4", operation("execute_tool", _attr("gen_ai.tool.name", "refund"))),  # unset
        _span("a5", operation("chat"), name="chat", status={"code": 1}),
    ]
    raw = _otlp(spans)
    steps = normalize_trace(raw).steps
    assert [_view(step) for step in steps] == _eager_views(raw)
    assert [(step.name, step.kind) for step in steps][:2] == [
        ("agent", "agent"),
        ("pay", "tool_call"),
    ]
