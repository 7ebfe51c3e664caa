"""Jaeger query-API JSON: ``{"data": [trace, ...]}``, one trace object (``spans`` with
``processes``), or a bare array of Jaeger spans (``traceID``, ``spanID``, ``operationName``,
``references``, tags, logs, an embedded ``process``). Three shapes, so three registry
entries; one decoder of a span."""

from __future__ import annotations

from typing import Any

from canon.gates.contracts.execution import StepStatus
from canon.gates.contracts.otel.formats.base import SpanSink, TraceFormat, Where, text
from canon.gates.contracts.otel.rawspan import RawEvent, RawSpan
from canon.gates.contracts.otel.values import (
    decode_jaeger_tags,
    decode_status,
    normalize_id,
    to_nanos,
)

_JAEGER = "jaeger, jaeger-ui"


def _claims_query(raw: dict[str, Any]) -> bool:
    data = raw.get("data")
    return isinstance(data, list) and all(isinstance(t, dict) and "spans" in t for t in data)


def _read_query(raw: dict[str, Any], sink: SpanSink, where: str) -> None:
    for trace in raw["data"]:
        _read_trace(trace, sink, where)


def is_trace(raw: dict[str, Any]) -> bool:
    """Whether an object with a ``spans`` list is one Jaeger trace (not a plain span list)."""
    spans = raw.get("spans")
    return isinstance(spans, list) and (
        "processes" in raw or any(isinstance(s, dict) and "spanID" in s for s in spans)
    )


def _read_one_trace(trace: dict[str, Any], sink: SpanSink, where: str) -> None:
    if "final_output" in trace:
        sink.final_output = trace["final_output"]
    _read_trace(trace, sink, where)


def _read_trace(trace: dict[str, Any], sink: SpanSink, where: str) -> None:
    processes = trace.get("processes")
    for process in processes.values() if isinstance(processes, dict) else ():
        if isinstance(process, dict):
            sink.add_resource(_process_attributes(process))
    spans = trace.get("spans")
    for span in spans if isinstance(spans, list) else ():
        if isinstance(span, dict):
            _read_span(span, sink, where)


def _claims_span(item: dict[str, Any]) -> bool:
    return "spanID" in item or "operationName" in item


def _read_span(span: dict[str, Any], sink: SpanSink, where: str) -> None:
    tags = decode_jaeger_tags(span.get("tags"))
    start = to_nanos(span.get("startTime"))
    duration = span.get("duration")
    # Jaeger durations are microseconds.
    end = start + int(duration) * 1000 if isinstance(duration, (int, float)) else start
    status: StepStatus = decode_status(tags.get("otel.status_code"))
    if tags.get("error") is True:
        status = "error"
    logs = span.get("logs")
    process = span.get("process")
    # a bare Jaeger span carries its own process
    sink.add_resource(_process_attributes(process) if isinstance(process, dict) else {})
    sink.add(
        RawSpan(
            sink.count,
            text(span.get("operationName")),
            normalize_id(span.get("traceID"), 32),
            normalize_id(span.get("spanID")),
            normalize_id(_parent(span)),
            start,
            end,
            status,
            tags,
            _events(logs) if logs else (),
            text(tags.get("otel.scope.name")),
        )
    )


def _events(logs: object) -> tuple[RawEvent, ...]:
    if not isinstance(logs, list):
        return ()
    out = []
    for log in logs:
        if isinstance(log, dict):
            fields = decode_jaeger_tags(log.get("fields"))
            out.append(RawEvent(text(fields.get("event")), fields))
    return tuple(out)


def _parent(span: dict[str, Any]) -> object:
    """The parent span id of a Jaeger span: its CHILD_OF reference, else the first one."""
    references = span.get("references")
    if isinstance(references, list):
        refs = [r for r in references if isinstance(r, dict)]
        for ref in refs:
            if ref.get("refType") == "CHILD_OF":
                return ref.get("spanID")
        if refs:
            return refs[0].get("spanID")
    return span.get("parentSpanID")


def _process_attributes(process: dict[str, Any]) -> dict[str, Any]:
    """A Jaeger process as resource attributes (its tags plus ``service.name``)."""
    attributes = decode_jaeger_tags(process.get("tags"))
    service = process.get("serviceName")
    if isinstance(service, str):
        attributes["service.name"] = service
    return attributes


QUERY = TraceFormat(
    name="jaeger",
    title="Jaeger query API",
    expected="a Jaeger export (data[].spans)",
    shape='`{"data": [trace, ...]}`: each trace\'s `spans` (`traceID`, `spanID`, '
    "`operationName`, `references`, tags, logs) and `processes`",
    learned_from=_JAEGER,
    claims=_claims_query,
    keys=("data",),
    read=_read_query,
)
TRACE = TraceFormat(
    name="jaeger-trace",
    title="Jaeger trace",
    expected="one Jaeger trace",
    shape="one trace object: `spans` with `processes`, or spans with `spanID`",
    learned_from=_JAEGER,
    claims=is_trace,
    keys=("spans",),
    read=_read_one_trace,
)
SPAN = TraceFormat(
    name="jaeger-span",
    title="Jaeger spans",
    expected="an array of Jaeger spans",
    shape="a bare array of Jaeger spans (`spanID` or `operationName`), each with its embedded "
    "`process`",
    learned_from=_JAEGER,
    claims=_claims_span,
    keys=("spanID", "operationName"),
    read=_read_span,
    at=(Where.ITEM,),
    span_parts=frozenset({"references", "tags", "logs", "process", "warnings"}),
)
