"""Inputs that are not traces: clear TraceErrors, never empty executions."""

from __future__ import annotations

from typing import Any

import pytest

from canon.errors import InputError
from canon.gates.contracts.otel import TraceError, normalize_trace, parse_trace_text


def test_trace_error_is_an_input_error() -> None:
    assert issubclass(TraceError, InputError)
    assert TraceError("x").exit_code == 2


@pytest.mark.parametrize("text", ["", "   \n", "{not json", "a b c\nd", "{}\n{"])
def test_text_that_is_not_json_names_the_source(text: str) -> None:
    with pytest.raises(TraceError, match=r"^runs/t1\.json: "):
        parse_trace_text(text, source="runs/t1.json")


def test_not_json_error_says_what_was_expected() -> None:
    with pytest.raises(TraceError, match="expected an OTLP/Jaeger JSON export"):
        parse_trace_text("<html></html>", source="f")


@pytest.mark.parametrize(
    ("raw", "found"),
    [
        ({}, "JSON object with keys []"),
        ({"hello": "world"}, "JSON object with keys ['hello']"),
        (42, "int at top level"),
        ("text", "string at top level"),
        (None, "null at top level"),
        ({"resourceSpans": "oops"}, "string at top level.resourceSpans, not a list"),
        ({"spans": {"a": 1}}, "'spans' holding JSON object"),
        ([{"nope": 1}], "JSON object with keys ['nope']"),
    ],
)
def test_json_that_is_not_a_trace_is_a_trace_error(raw: object, found: str) -> None:
    with pytest.raises(TraceError) as caught:
        normalize_trace(raw, source="in.json")
    message = str(caught.value)
    assert message.startswith("in.json: not a trace: expected OTLP JSON")
    assert found in message


@pytest.mark.parametrize(
    "raw",
    [
        {"resourceSpans": []},
        {"resourceSpans": [{"scopeSpans": [{"spans": []}]}]},
        {"batches": [{"instrumentationLibrarySpans": []}]},
        {"data": []},
        {"data": [{"traceID": "x", "spans": []}]},
        {"spans": []},
        [],
        {"spans": [1, "two", None]},
    ],
)
def test_a_trace_with_zero_spans_is_an_error_not_an_empty_execution(raw: Any) -> None:
    with pytest.raises(TraceError, match=r"^t\.json: the trace holds no spans"):
        normalize_trace(raw, source="t.json")


def test_non_string_text_is_refused() -> None:
    with pytest.raises(TraceError, match="expected trace text"):
        parse_trace_text(b"{}", source="b")  # type: ignore[arg-type]


def test_odd_typed_span_fields_do_not_lose_a_named_span() -> None:
    raw = {
        "spans": [
            {
                "name": "lookup",
                "spanId": "ab12",
                "parentSpanId": {"a": 1},
                "startTimeUnixNano": "not a time",
                "status": [1],
                "attributes": "nope",
                "events": "nope",
            }
        ]
    }
    execution = normalize_trace(raw)
    assert execution.step_names() == ("lookup",)
    assert execution.steps[0].start_ns == 0
    assert execution.steps[0].status == "unset"


def test_an_object_without_a_span_name_or_id_is_not_a_span() -> None:
    raw = {"spans": [{"name": 7, "spanId": ["x"], "startTimeUnixNano": "not a time"}]}
    with pytest.raises(TraceError, match="not a trace: 1 object"):
        normalize_trace(raw)
