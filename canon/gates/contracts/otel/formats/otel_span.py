"""One span in OTLP JSON or OTel SDK shape (``ReadableSpan.to_json``: ``context``/``parent``
objects, integer or hex ids, ISO times; the JS SDK's ``spanContext``; Okahu's ``span_name``).

The generic shape: anything with a span's marks that no specific format claims is read
here, at rank 1 (after the formats that never overlap). A span needs a name and an id or a
start time; an object that has neither is counted as no span (and kept if a log record).
"""

from __future__ import annotations

from typing import Any

from canon.gates.contracts.otel.formats.base import (
    SpanSink,
    TraceFormat,
    Where,
    held_trace,
    text,
)
from canon.gates.contracts.otel.formats.otlp import OTLP_KEYS, otlp_raw_span
from canon.gates.contracts.otel.rawspan import RawSpan
from canon.gates.contracts.otel.shapes import sdk_fields
from canon.gates.contracts.otel.values import (
    decode_kv_list,
    decode_status,
    normalize_id,
    otlp_events,
    to_nanos,
)

_new_span = tuple.__new__
_SPAN_MARKERS = (
    "spanId",
    "span_id",
    "spanID",
    "context",
    "spanContext",
    "name",
    "span_name",
    "operationName",
)

# What a span holds of its own (lists and objects that are no spans of the trace)
SPAN_PARTS = frozenset(
    {
        "attributes",
        "events",
        "span_events",
        "links",
        "resource",
        "context",
        "spanContext",
        "parent",
        "parentSpanContext",
        "status",
        "instrumentation_scope",
        "instrumentationScope",
        "instrumentationLibrary",
        "scope",
        "startTime",
        "endTime",
        "duration",
    }
)


def looks_like_span(item: dict[str, Any]) -> bool:
    """Whether an object has a span's marks (and is no OTLP document)."""
    return any(key in item for key in _SPAN_MARKERS) and not any(k in item for k in OTLP_KEYS)


def read_span(span: object, scope: str, sink: SpanSink) -> None:
    """Read one span in OTLP JSON or OTel-SDK shape into ``sink``."""
    if not isinstance(span, dict):
        return  # a stray scalar in a span list is noise, not a span
    held = held_trace(span, SPAN_PARTS)
    if held is not None:
        raise sink.fail(
            f"a span in a span list that also holds {held[1]} span-like object(s) under "
            f"{held[0]!r} (a container, not a span: read as one, its steps would be lost)"
        )
    name = span.get("name")
    if name is None:
        name = span.get("span_name")  # Okahu exports
    if not isinstance(name, str) or not name.strip():
        sink.reject(span)
        return
    own_resource = span.get("resource")
    if isinstance(own_resource, dict):
        sink.add_resource(decode_kv_list(own_resource.get("attributes")))
    if not scope:
        own_scope = (
            span.get("instrumentation_scope")
            or span.get("instrumentationScope")
            or span.get("instrumentationLibrary")
            or span.get("scope")
        )
        if isinstance(own_scope, dict):
            scope = text(own_scope.get("name"))
    if "spanId" in span and "startTimeUnixNano" in span:
        sink.add(otlp_raw_span(span, scope, sink.count))
        return
    trace_id, span_id, parent, start, end = sdk_fields(span)
    if not normalize_id(span_id) and not to_nanos(start):
        sink.reject(span)  # a span needs an id or a start time besides its name
        return
    events = span.get("events")
    sink.add(
        _new_span(
            RawSpan,
            (
                sink.count,
                name,
                normalize_id(trace_id, 32),
                normalize_id(span_id),
                normalize_id(parent),
                to_nanos(start),
                to_nanos(end),
                decode_status(span.get("status")),
                decode_kv_list(span.get("attributes")),
                otlp_events(events) if events else (),
                scope,
            ),
        )
    )


def _read(raw: dict[str, Any], sink: SpanSink, where: str) -> None:
    read_span(raw, "", sink)


FORMAT = TraceFormat(
    name="otel-span",
    title="OTel span",
    expected="",  # listed as the span list's shape
    shape="one span in OTLP JSON, OTel SDK (`context`/`parent`, integer/hex/`0x` ids, ISO or "
    "ns times) or JS SDK shape (`spanContext`, `parentSpanContext`, `[s, ns]` times), or "
    "Okahu's `span_name`; read when no format above claims the object",
    learned_from="any-agent, strands-evals, Monocle, AgentOps",
    claims=looks_like_span,
    keys=_SPAN_MARKERS,
    read=_read,
    at=(Where.DOCUMENT, Where.ITEM),
    rank=1,
    span_parts=SPAN_PARTS,
)
