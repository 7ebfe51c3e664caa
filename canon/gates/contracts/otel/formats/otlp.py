"""OTLP JSON traces: ``resourceSpans`` (or snake_case ``resource_spans``, or Tempo's
``batches``) of scopes (``scopeSpans``, ``scope_spans``, legacy
``instrumentationLibrarySpans``) of spans."""

from __future__ import annotations

from typing import Any

from canon.gates.contracts.otel.formats.base import SpanSink, TraceFormat, text, type_name
from canon.gates.contracts.otel.rawspan import RawSpan
from canon.gates.contracts.otel.values import (
    decode_kv_list,
    decode_status,
    normalize_id,
    otlp_events,
    to_nanos,
)

OTLP_KEYS = ("resourceSpans", "resource_spans", "batches")
_SCOPE_KEYS = ("scopeSpans", "scope_spans", "instrumentationLibrarySpans")
_new_span = tuple.__new__


def _claims(raw: dict[str, Any]) -> bool:
    return "resourceSpans" in raw or "resource_spans" in raw or "batches" in raw


def _read(raw: dict[str, Any], sink: SpanSink, where: str) -> None:
    key = next(key for key in OTLP_KEYS if key in raw)
    resource_spans = raw[key]
    if not isinstance(resource_spans, list):
        raise sink.fail(f"{type_name(resource_spans)} at {where}.{key}, not a list")
    for block in resource_spans:
        if not isinstance(block, dict):
            continue
        resource = block.get("resource")
        if isinstance(resource, dict):
            sink.add_resource(decode_kv_list(resource.get("attributes")))
        for scope_key in _SCOPE_KEYS:
            scopes = block.get(scope_key)
            if not isinstance(scopes, list):
                continue
            for scope_block in scopes:
                if not isinstance(scope_block, dict):
                    continue
                scope = scope_block.get("scope") or scope_block.get("instrumentationLibrary")
                scope_name = scope.get("name") if isinstance(scope, dict) else None
                spans = scope_block.get("spans")
                if isinstance(spans, list):
                    sink.add_otlp_spans(spans, text(scope_name))


def otlp_raw_span(span: Any, scope: str, position: int) -> RawSpan:
    """Decode one OTLP JSON span (it has ``spanId`` and ``startTimeUnixNano``)."""
    if span.__class__ is not dict:
        span = span.as_dict()  # a typed span: its JSON
    name = span.get("name")
    events = span.get("events")
    # tuple.__new__ skips the NamedTuple constructor's Python-level wrapper
    return _new_span(
        RawSpan,
        (
            position,
            name if isinstance(name, str) else "",
            normalize_id(span.get("traceId"), 32),
            normalize_id(span["spanId"]),
            normalize_id(span.get("parentSpanId")),
            to_nanos(span["startTimeUnixNano"]),
            to_nanos(span.get("endTimeUnixNano")),
            decode_status(span.get("status")),
            decode_kv_list(span.get("attributes")),
            otlp_events(events) if events else (),
            scope,
        ),
    )


FORMAT = TraceFormat(
    name="otlp",
    title="OTLP JSON",
    expected="OTLP JSON (resourceSpans; one document per line too), a Tempo export (batches)",
    shape="`resourceSpans`/`scopeSpans`, snake_case, legacy `instrumentationLibrarySpans`, "
    "Tempo's `batches`",
    learned_from="opentelemetry-proto, Strands, agentevals",
    claims=_claims,
    keys=OTLP_KEYS,
    read=_read,
)
