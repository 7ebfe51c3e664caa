"""deepeval traces: the trace object deepeval's tracing sends to Confident AI, its spans in
one list per type (``baseSpans``, ``agentSpans``, ``llmSpans``, ``retrieverSpans``,
``toolSpans``) beside the trace's own fields (``uuid``, ``name``, ``startTime``, ``input``,
``output`` ...).

A span's ``type`` is its kind and its ``input``/``output`` its payloads (``records.py``);
``uuid``/``parentUuid`` link the spans, ``traceUuid`` (else the trace's ``uuid``) names the
trace; ``status: ERRORED`` fails a step. A tool span named by the GenAI convention
(``execute_tool calculate``) is the call of the tool it names. The trace's ``output`` is the
run's answer when no span gives one.
"""

from __future__ import annotations

from typing import Any

from canon.gates.contracts.execution import StepStatus
from canon.gates.contracts.otel.formats.base import SpanSink, TraceFormat
from canon.gates.contracts.otel.formats.records import (
    listed_records,
    record_attributes,
    record_id,
    record_span,
    refuse_held,
)
from canon.gates.contracts.otel.rawspan import RawSpan

SPAN_LISTS = ("baseSpans", "agentSpans", "llmSpans", "retrieverSpans", "toolSpans")
_TYPES = {"baseSpans": "base", "agentSpans": "agent", "llmSpans": "llm"}
_TYPES |= {"retrieverSpans": "retriever", "toolSpans": "tool"}
# a trace's own fields that hold lists or objects (no spans)
_TRACE_PARTS = frozenset(SPAN_LISTS) | {"metadata", "tags", "input", "output", "toolsCalled"}
_TRACE_PARTS |= {"expectedTools", "retrievalContext", "context", "metricsData", "turns"}
_TOOL_PREFIX = "execute_tool "


def _claims(raw: dict[str, Any]) -> bool:
    return any(isinstance(raw.get(key), list) for key in SPAN_LISTS)


def _read(raw: dict[str, Any], sink: SpanSink, where: str) -> None:
    refuse_held(raw, _TRACE_PARTS, sink, where)
    trace = record_id(raw.get("uuid"), 32)
    for key, span, place in listed_records(raw, SPAN_LISTS, sink, where, "a deepeval span"):
        sink.add(_span(span, _TYPES[key], trace, sink, place))
    output = raw.get("output")
    if output is not None and sink.final_output is None:
        sink.final_output = output


def _span(span: dict[str, Any], listed: str, trace: str, sink: SpanSink, where: str) -> RawSpan:
    span_id = record_id(span.get("uuid"))
    name = span.get("name")
    if not span_id or not isinstance(name, str) or not name.strip():
        raise sink.fail(f"a deepeval span without a uuid or a name at {where}")
    kind = span.get("type")
    kind = kind if isinstance(kind, str) else listed
    tool = name[len(_TOOL_PREFIX) :] if kind == "tool" and name.startswith(_TOOL_PREFIX) else name
    attributes = record_attributes(
        kind, tool, span.get("input"), span.get("output"), span.get("model")
    )
    status: StepStatus = "error" if span.get("status") in ("ERRORED", "ERROR") else "unset"
    trace = record_id(span.get("traceUuid"), 32) or trace
    ids = (trace, span_id, record_id(span.get("parentUuid")))
    times = (span.get("startTime"), span.get("endTime"))
    return record_span(sink, ids, name, times, status, attributes, "deepeval")


FORMAT = TraceFormat(
    name="deepeval",
    title="deepeval trace",
    expected="a deepeval trace",
    shape="the trace object deepeval sends: `baseSpans`, `agentSpans`, `llmSpans`, "
    "`retrieverSpans`, `toolSpans` beside the trace's `uuid`, `name`, `startTime`, `input`, "
    "`output`; `uuid`/`parentUuid`, span `type` as the step kind, `input`/`output` kept as "
    "`input.value`/`output.value`, `status: ERRORED` fails the step, `execute_tool <name>` "
    "is a call of `<name>`",
    learned_from="confident-ai/deepeval integration tests (Strands on AgentCore, LangChain)",
    claims=_claims,
    keys=SPAN_LISTS,
    read=_read,
)
