"""Zipkin v2 spans: ``id``/``parentId``, ``timestamp``/``duration`` in microseconds, ``tags``,
``localEndpoint.serviceName``, annotations as events; a span may lack a name."""

from __future__ import annotations

from typing import Any

from canon.gates.contracts.execution import StepStatus
from canon.gates.contracts.otel.formats.base import SpanSink, TraceFormat, Where, text
from canon.gates.contracts.otel.rawspan import RawEvent, RawSpan
from canon.gates.contracts.otel.values import decode_status, normalize_id, to_nanos

_new_span = tuple.__new__  # skips the NamedTuple constructor's Python-level wrapper


def _claims(item: dict[str, Any]) -> bool:
    """Whether a JSON object is a Zipkin v2 span."""
    return (
        "id" in item
        and "traceId" in item
        and "spanId" not in item
        and ("localEndpoint" in item or "timestamp" in item)
    )


def _read(item: dict[str, Any], sink: SpanSink, where: str) -> None:
    tags = item.get("tags")
    attributes: dict[str, Any] = dict(tags) if isinstance(tags, dict) else {}
    kind = item.get("kind")
    if isinstance(kind, str):
        attributes.setdefault("span.kind", kind.lower())
    start = to_nanos(item.get("timestamp"))
    duration = item.get("duration")
    end = start + int(duration) * 1000 if isinstance(duration, int) and duration > 0 else start
    status: StepStatus = decode_status(attributes.get("otel.status_code"))
    if "error" in attributes:
        status = "error"  # Zipkin marks a failed span with an "error" tag, whatever its value
    endpoint = item.get("localEndpoint")
    service = endpoint.get("serviceName") if isinstance(endpoint, dict) else None
    events = tuple(
        RawEvent(text(note.get("value")), {"timestamp": note.get("timestamp")})
        for note in item.get("annotations") or ()
        if isinstance(note, dict)
    )
    scope = attributes.get("otel.scope.name") or attributes.get("otel.library.name")
    sink.add_resource({"service.name": service} if isinstance(service, str) else {})
    sink.add(
        _new_span(
            RawSpan,
            (
                sink.count,
                text(item.get("name")),
                normalize_id(item.get("traceId"), 32),
                normalize_id(item.get("id")),
                normalize_id(item.get("parentId")),
                start,
                end,
                status,
                attributes,
                events,
                text(scope),
            ),
        )
    )


FORMAT = TraceFormat(
    name="zipkin",
    title="Zipkin v2",
    expected="a Zipkin export",
    shape="`id`/`parentId`, `timestamp`/`duration` in µs, `tags` (an `error` tag fails the "
    "span), `localEndpoint.serviceName`, annotations as events; a span may lack `name`",
    learned_from="openzipkin/zipkin, opentelemetry-collector-contrib",
    claims=_claims,
    keys=("id",),
    read=_read,
    at=(Where.DOCUMENT, Where.ITEM),
    span_parts=frozenset({"tags", "localEndpoint", "remoteEndpoint", "annotations"}),
)
