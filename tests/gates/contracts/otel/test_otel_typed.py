"""Trace text read through msgspec structs gives what the dict road gives, or is left to it."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from canon.gates.contracts import load_contract, validate
from canon.gates.contracts.otel import (
    TraceError,
    jsontext,
    normalize_trace,
    normalize_trace_text,
    normalize_traces,
    normalize_traces_text,
    otlptext,
    parse_trace_text,
)
from canon.gates.contracts.otel.typed import OtlpDocument, decode_documents, document_batch

from support.corpus import TESTS, TRACE_FILES

CORPUS_FILES = TRACE_FILES
CONTRACT = load_contract(
    {
        "name": "typed-road",
        "version": "1.0.0",
        "constraints": [
            {"type": "must_include_steps", "steps": ["lookup"]},
            {
                "type": "must_contain_citations",
                "min_count": 1,
                "when": {"tool_result_matches": {"tool": "lookup", "key": "ok", "value": True}},
            },
        ],
    }
)


def _view(execution: Any) -> tuple[Any, ...]:
    """Everything an execution says, its steps and framework included, comparable."""
    steps = tuple(
        (step, dict(step.attributes), step.inputs, step.outputs) for step in execution.steps
    )
    verdict = validate(CONTRACT, execution)
    return (
        execution.execution_id,
        steps,
        execution.input_text,
        execution.output_text,
        dict(execution.metadata),
        execution.framework,
        verdict.status,
        verdict.violations,
    )


def _outcome(read: Any, *args: Any) -> object:
    try:
        result = read(*args)
    except TraceError as exc:
        return ("error", str(exc))
    return [_view(e) for e in result] if isinstance(result, list) else _view(result)


def _same_both_roads(text: str) -> None:
    """The typed road (when it takes the text) and the dict road agree, runs and errors."""
    assert _outcome(normalize_traces_text, text) == _outcome(
        lambda t: normalize_traces(parse_trace_text(t)), text
    )
    assert _outcome(normalize_trace_text, text) == _outcome(
        lambda t: normalize_trace(parse_trace_text(t)), text
    )


def _typed(text: str) -> bool:
    documents = decode_documents(text)
    return documents is not None and document_batch(documents) is not None


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: str(p.relative_to(TESTS)))
def test_every_corpus_file_reads_the_same_on_both_roads(path: Path) -> None:
    _same_both_roads(path.read_text(encoding="utf-8"))


def _plain_otlp(text: str) -> bool:
    """One OTLP document, or JSON lines of them (as the Collector's file exporter writes)."""
    try:
        documents = [json.loads(text)]
    except ValueError:
        try:
            documents = [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError:
            return False
    return all(isinstance(d, dict) and list(d) == ["resourceSpans"] for d in documents)


def test_the_typed_road_takes_every_plain_otlp_file_of_the_corpus() -> None:
    texts = {path.name: path.read_text(encoding="utf-8") for path in CORPUS_FILES}
    plain = sorted(name for name, text in texts.items() if _plain_otlp(text))
    assert len(plain) >= 12, plain  # the corpus's OTLP JSON exports (Strands, ADK, ...)
    assert [name for name in plain if not _typed(texts[name])] == []


def _span(index: int, **extra: Any) -> dict[str, Any]:
    tool = index % 2 == 0
    attributes = [
        {
            "key": "gen_ai.operation.name",
            "value": {"stringValue": "execute_tool" if tool else "chat"},
        },
    ]
    if tool:
        attributes += [
            {"key": "gen_ai.tool.name", "value": {"stringValue": "lookup"}},
            {"key": "gen_ai.tool.call.result", "value": {"stringValue": '{"ok": true}'}},
        ]
    span = {
        "traceId": "ab" * 16,
        "spanId": f"{index + 2:016x}",
        "parentSpanId": f"{1:016x}",
        "name": "execute_tool lookup" if tool else "chat",
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + index * 1000),
        "endTimeUnixNano": str(1_700_000_000_000_000_000 + index * 1000 + 500),
        "status": {"code": 1},
        "attributes": attributes,
    }
    span.update(extra)
    return span


def _document(spans: list[dict[str, Any]], scope: Any = None) -> dict[str, Any]:
    root = {
        "traceId": "ab" * 16,
        "spanId": f"{1:016x}",
        "name": "invoke_agent",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000000001000000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
            {"key": "gen_ai.output.messages", "value": {"stringValue": "See [1]."}},
        ],
    }
    block: dict[str, Any] = {"spans": [root, *spans]}
    if scope is not None:
        block["scope"] = scope
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [block]}]}


ODD_SPANS = {
    "an unknown span field": lambda s: s.update(instrumentationScope={"name": "x"}),
    "no name": lambda s: s.pop("name"),
    "no status": lambda s: s.pop("status"),
    "an empty status": lambda s: s.update(status={}),
    "a text status": lambda s: s.update(status={"code": "STATUS_CODE_ERROR"}),
    "an unset status": lambda s: s.update(status={"code": 0}),
    "null attributes": lambda s: s.update(attributes=None),
    "no attributes": lambda s: s.pop("attributes"),
    "empty attributes": lambda s: s.update(attributes=[]),
    "the tool name first": lambda s: s["attributes"].reverse(),
    "one attribute": lambda s: s.update(attributes=s["attributes"][:1]),
    "two tags, int first": lambda s: s["attributes"].append(
        {"key": "n", "value": {"intValue": 5, "boolValue": True}}
    ),
    "two tags, bool first": lambda s: s["attributes"].append(
        {"key": "n", "value": {"boolValue": True, "intValue": 5}}
    ),
    "an unknown value tag": lambda s: s["attributes"].append({"key": "n", "value": {"x": 1}}),
    "a key that is no text": lambda s: s["attributes"].append({"key": 3, "value": {}}),
    "a float intValue": lambda s: s["attributes"].append({"key": "n", "value": {"intValue": 1.5}}),
    "a huge intValue": lambda s: s["attributes"].append({"key": "n", "value": {"intValue": 2**80}}),
    "an int doubleValue": lambda s: s["attributes"].append(
        {"key": "n", "value": {"doubleValue": 3}}
    ),
    "a null parent": lambda s: s.update(parentSpanId=None),
    "no parent": lambda s: s.pop("parentSpanId"),
    "upper-case ids": lambda s: s.update(spanId=s["spanId"].upper()),
    "int times": lambda s: s.update(startTimeUnixNano=int(s["startTimeUnixNano"])),
    "an event": lambda s: s.update(
        events=[{"name": "gen_ai.choice", "attributes": [{"key": "a", "value": {}}]}]
    ),
    "another trace": lambda s: s.update(traceId="cd" * 16),
    "a blank tool name": lambda s: (
        s["attributes"][1:2] and s["attributes"][1].update(value={"stringValue": "  "})
    ),
}


@pytest.mark.parametrize("odd", sorted(ODD_SPANS))
def test_an_odd_span_reads_the_same_on_both_roads(odd: str) -> None:
    spans = [_span(index) for index in range(4)]
    ODD_SPANS[odd](spans[2])
    _same_both_roads(json.dumps(_document(spans)))


@pytest.mark.parametrize(
    "text",
    [
        '{"resourceSpans": []}',
        '{"resourceSpans": [{"scopeSpans": [{"spans": []}]}]}',
        '{"resourceSpans": [], "resourceLogs": []}',
        '{"resourceSpans": [{"resource": null, "scopeSpans": null}]}',
        '{"resourceSpans": [{"scopeSpans": [{"scope": {}, "spans": [{"name": "a"}]}]}]}',
        '{"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": NaN}]}]}]}',
        '{"resourceSpans": 3}',
        "",
        "   ",
        '{"resourceSpans": [' + "[" * 3000 + "]" * 3000 + "]}",
    ],
    ids=[
        "none",
        "empty scope",
        "logs too",
        "nulls",
        "no ids",
        "nan",
        "not a list",
        "empty",
        "blank",
        "deep",
    ],
)
def test_documents_without_spans_fail_the_same_on_both_roads(text: str) -> None:
    _same_both_roads(text)


def test_two_runs_in_one_file_split_the_same_on_both_roads() -> None:
    spans = [_span(index) for index in range(4)]
    other = copy.deepcopy(_document(spans))
    for span in other["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        span["traceId"] = "cd" * 16
        span["startTimeUnixNano"] = str(int(span["startTimeUnixNano"]) + 10**12)
        span["endTimeUnixNano"] = str(int(span["endTimeUnixNano"]) + 10**12)
    document = _document(spans)
    document["resourceSpans"] += other["resourceSpans"]
    text = json.dumps(document)
    assert _typed(text)
    assert len(normalize_traces_text(text)) == 2
    _same_both_roads(text)


def test_a_framework_scope_reads_the_same_on_both_roads() -> None:
    text = json.dumps(_document([_span(i) for i in range(4)], scope={"name": "strands.agent"}))
    assert _typed(text)
    assert normalize_trace_text(text).framework == normalize_trace(json.loads(text)).framework
    _same_both_roads(text)


_VALUES = st.one_of(
    st.fixed_dictionaries({"stringValue": st.text(max_size=8)}),
    st.fixed_dictionaries(
        {"intValue": st.one_of(st.integers(), st.text("0123456789", max_size=3))}
    ),
    st.fixed_dictionaries({"boolValue": st.booleans()}),
    st.fixed_dictionaries({"doubleValue": st.one_of(st.floats(allow_nan=False), st.integers())}),
    st.dictionaries(
        st.sampled_from(["stringValue", "intValue", "boolValue", "doubleValue", "bytesValue"]),
        st.one_of(st.integers(-3, 3), st.booleans(), st.text(max_size=3)),
        max_size=3,
    ),
)
_KEYS = st.sampled_from(
    ["gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.status", "tool.name", "n", "ok"]
)
_ATTRIBUTES = st.lists(st.fixed_dictionaries({"key": _KEYS, "value": _VALUES}), max_size=4)
_OPS = st.sampled_from(["chat", "execute_tool", "invoke_agent", "retrieve", "embeddings", ""])


@st.composite
def _spans(draw: st.DrawFn) -> list[dict[str, Any]]:
    spans = []
    for index in range(draw(st.integers(1, 6))):
        span = _span(index)
        span["attributes"][0]["value"] = {"stringValue": draw(_OPS)}
        span["attributes"] += draw(_ATTRIBUTES)
        if draw(st.booleans()):
            span["attributes"] = draw(st.permutations(span["attributes"]))
        if draw(st.integers(0, 5)) == 0:
            span["status"] = draw(st.sampled_from([{}, {"code": 2}, {"code": 0}, {"message": "m"}]))
        spans.append(span)
    return spans


@settings(max_examples=150, deadline=None)
@given(_spans())
def test_generated_otlp_reads_the_same_on_both_roads(spans: list[dict[str, Any]]) -> None:
    _same_both_roads(json.dumps(_document(spans)))


def test_without_msgspec_the_dict_road_reads_text(monkeypatch: pytest.MonkeyPatch) -> None:
    text = json.dumps(_document([_span(i) for i in range(4)]))
    typed = _view(normalize_trace_text(text))
    jsontext._fast_decoder.cache_clear()
    monkeypatch.setitem(sys.modules, "msgspec", None)
    try:
        assert otlptext.otlp_documents(text) is None
        assert _view(normalize_trace_text(text)) == typed
    finally:
        jsontext._fast_decoder.cache_clear()


def test_the_typed_document_is_what_the_text_holds() -> None:
    text = json.dumps(_document([_span(i) for i in range(3)]))
    documents = otlptext.otlp_documents(text)
    assert documents is not None and len(documents) == 1
    document = documents[0]
    assert isinstance(document, OtlpDocument)
    span = document.resourceSpans[0].scopeSpans[0].spans[1]  # type: ignore[index]
    assert span.as_dict() == json.loads(text)["resourceSpans"][0]["scopeSpans"][0]["spans"][1]
    assert span.get("traceState", "none") == "none"


def test_an_integer_past_the_digit_limit_is_a_trace_error_naming_the_file(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from canon.cli import main

    text = '{"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": ' + "7" * 5000 + "}]}]}]}"
    with pytest.raises(TraceError, match=r"^t\.json: the trace is not valid JSON: Exceeds"):
        normalize_traces_text(text, source="t.json")
    trace = tmp_path / "huge.json"
    trace.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(
        main, ["contract", "run", "--contract", "kyc-aml-screening-v1", "--traces", str(trace)]
    )
    assert result.exit_code == 2, result.output
    assert f"{trace}: the trace is not valid JSON" in result.output


def _lines(*documents: dict[str, Any]) -> str:
    return "\n".join(json.dumps(document) for document in documents) + "\n"


def test_otlp_json_lines_read_the_same_on_both_roads() -> None:
    first = _document([_span(i) for i in range(3)], scope={"name": "first"})
    second = _document([_span(i + 10) for i in range(2)], scope={"name": "second"})
    second["resourceSpans"][0]["resource"]["attributes"] = [
        {"key": "service.name", "value": {"stringValue": "later wins"}}
    ]
    text = _lines(first, second)
    assert _typed(text)
    assert normalize_trace_text(text).metadata["service.name"] == "later wins"
    _same_both_roads(text)
    _same_both_roads("\n\n" + text.replace("\n", "\r\n") + "\n  \n")


@pytest.mark.parametrize(
    "last",
    [
        '{"resourceLogs": []}',
        '{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x"}]}]}]}',
        "not json",
        '{"resourceSpans": []}',
        "[1, 2]",
    ],
    ids=["logs", "no ids", "not json", "no spans", "an array"],
)
def test_json_lines_with_an_odd_line_go_the_dict_road(last: str) -> None:
    text = _lines(_document([_span(i) for i in range(3)])) + last + "\n"
    assert not _typed(text) or last == '{"resourceSpans": []}'
    _same_both_roads(text)
