"""Exports of observability backends that are not OTLP: Langfuse, Datadog APM and Zipkin v2.

Each reader turns one backend object into ``RawSpan`` values (position 0: the collector
numbers them) with OpenTelemetry-style attributes, so the usual conventions classify them:

- Langfuse: a trace export ``{trace, observations[]}`` (or the API's trace with its
  ``observations`` inside). An observation's OTel attributes sit under
  ``metadata.attributes`` (a JSON string or an object); its Langfuse ``type`` is kept as
  ``langfuse.observation.type`` and its ``input``/``output`` as ``input.value`` and
  ``output.value`` when the attributes hold no such key.
- Datadog APM: a span with ``meta``/``metrics`` maps, integer ids (or, from dd-trace-js,
  decimal strings) and ``start``/``duration`` in nanoseconds; ``resource`` is kept as
  ``resource.name`` (Datadog's own OTel mapping).
- Zipkin v2: ``id``/``parentId``, ``timestamp``/``duration`` in microseconds, ``tags``,
  ``localEndpoint.serviceName``; a span may lack a name.
"""

from __future__ import annotations

import json
from typing import Any

from canon.gates.contracts.execution import StepStatus
from canon.gates.contracts.otel.rawspan import RawEvent, RawSpan
from canon.gates.contracts.otel.values import decode_status, normalize_id, to_nanos

_new_span = tuple.__new__
# Datadog names its LLM integrations' spans by product ("CrewAI Tool", "Pydantic Agent").
_DATADOG_PRODUCTS = {"crewai": "crewai", "pydantic": "pydantic_ai"}
_HEX = frozenset("0123456789abcdef")
_NO_HIGH_BITS = "0" * 16  # a 64-bit trace id written as 32 hex digits


def is_langfuse(raw: dict[str, Any]) -> bool:
    """Whether a JSON object is a Langfuse trace export (its observations listed)."""
    if isinstance(raw.get("observations"), list):
        return True
    trace = raw.get("trace")
    return isinstance(trace, dict) and isinstance(trace.get("observations"), list)


def is_datadog_span(item: dict[str, Any]) -> bool:
    """Whether a JSON object is a span in Datadog's APM trace format."""
    return (
        "span_id" in item
        and "start" in item
        and "duration" in item
        and ("meta" in item or "metrics" in item or "resource" in item)
    )


def is_zipkin_span(item: dict[str, Any]) -> bool:
    """Whether a JSON object is a Zipkin v2 span."""
    return (
        "id" in item
        and "traceId" in item
        and "spanId" not in item
        and ("localEndpoint" in item or "timestamp" in item)
    )


def langfuse_spans(raw: dict[str, Any]) -> tuple[list[RawSpan], dict[str, Any], object]:
    """The observations of a Langfuse export as spans, its resource attributes, its output."""
    trace = raw.get("trace") if isinstance(raw.get("trace"), dict) else raw
    assert isinstance(trace, dict)
    observations = raw.get("observations")
    if not isinstance(observations, list):
        observations = trace.get("observations")
    resource: dict[str, Any] = {}
    trace_meta = _json_object(trace.get("metadata"))
    resource.update(_json_object(trace_meta.get("resourceAttributes")))
    spans: list[RawSpan] = []
    for item in observations if isinstance(observations, list) else ():
        if not isinstance(item, dict):
            continue
        metadata = _json_object(item.get("metadata"))
        attributes = dict(_json_object(metadata.get("attributes")))
        resource.update(_json_object(metadata.get("resourceAttributes")))
        kind = item.get("type")
        if isinstance(kind, str):
            attributes.setdefault("langfuse.observation.type", kind.upper())
        for field, key in (("input", "input.value"), ("output", "output.value")):
            value = item.get(field)
            if value is not None and key not in attributes:
                attributes[key] = value if isinstance(value, str) else json.dumps(value)
        if isinstance(item.get("model"), str):
            attributes.setdefault("gen_ai.request.model", item["model"])
        scope = _json_object(metadata.get("scope")).get("name")
        status: StepStatus = "error" if item.get("level") == "ERROR" else "unset"
        start = to_nanos(item.get("startTime"))
        spans.append(
            _span(
                _text(item.get("name")),
                normalize_id(item.get("traceId") or trace.get("id"), 32),
                normalize_id(item.get("id")),
                normalize_id(item.get("parentObservationId")),
                start,
                to_nanos(item.get("endTime")) or start,
                status,
                attributes,
                _text(scope),
            )
        )
    return spans, resource, trace.get("output")


def datadog_span(item: dict[str, Any]) -> tuple[RawSpan, dict[str, Any]]:
    """One Datadog APM span, and the resource attributes (service) it names."""
    attributes: dict[str, Any] = {}
    for key in ("meta", "metrics"):
        values = item.get(key)
        if isinstance(values, dict):
            for name, value in values.items():
                attributes.setdefault(str(name), value)
    resource_name = item.get("resource")
    if isinstance(resource_name, str):
        attributes["resource.name"] = resource_name
    start = to_nanos(item.get("start"))
    duration = item.get("duration")
    end = start + int(duration) if isinstance(duration, int) and duration > 0 else start
    name = _text(item.get("name"))
    error = item.get("error")
    status: StepStatus = "error" if error in (1, True, "1") else "unset"
    service = item.get("service")
    resource = {"service.name": service} if isinstance(service, str) else {}
    scope = _text(attributes.get("component"))
    if not scope:
        if "." in name:
            scope = name.partition(".")[0]
        elif isinstance(resource_name, str):
            scope = _DATADOG_PRODUCTS.get(resource_name.partition(" ")[0].lower(), "")
    return (
        _span(
            name,
            _datadog_trace_id(item.get("trace_id")),
            normalize_id(_datadog_number(item.get("span_id"))),
            normalize_id(_datadog_number(item.get("parent_id"))),
            start,
            end,
            status,
            attributes,
            scope,
        ),
        resource,
    )


def widen_datadog_trace_ids(entries: list[Any], datadog: set[int]) -> list[Any]:
    """The Datadog spans (file positions ``datadog``) with 128-bit trace ids where known.

    A Datadog span's ``trace_id`` is the low 64 bits of its trace id; the first span of a
    trace carries the high 64 bits as ``_dd.p.tid`` (16 hex digits). Joined they are the
    W3C trace id the rest of the stack (OpenTelemetry, the Datadog UI) shows, so a verdict
    written back as an event lands on the trace it judged.
    """
    high: dict[str, str] = {}
    for entry in entries:
        if entry.__class__ is RawSpan and entry.position in datadog:
            tid = entry.attributes.get("_dd.p.tid")
            if (
                isinstance(tid, str)
                and len(tid) == 16
                and tid.isascii()
                and all(digit in _HEX for digit in tid.lower())
                and entry.trace_id.startswith(_NO_HIGH_BITS)
            ):
                high.setdefault(entry.trace_id, tid.lower())
    if not high:
        return entries
    return [
        entry._replace(trace_id=high[entry.trace_id] + entry.trace_id[16:])
        if entry.__class__ is RawSpan and entry.position in datadog and entry.trace_id in high
        else entry
        for entry in entries
    ]


def _datadog_number(raw: object) -> object:
    """A Datadog id as its integer: dd-trace-js writes the uint64 ids as decimal strings."""
    if isinstance(raw, str) and raw.isascii() and raw.isdigit():
        return int(raw)
    return raw


def _datadog_trace_id(raw: object) -> str:
    """A Datadog trace id as 32 hex digits; snapshots number their traces from 0."""
    number = _datadog_number(raw)
    if isinstance(number, int) and not isinstance(number, bool) and number >= 0:
        # 0 is a real trace in a test-agent snapshot (its first one), not a missing id
        return format(number, "032x")
    return normalize_id(number, 32)


def zipkin_span(item: dict[str, Any]) -> tuple[RawSpan, dict[str, Any]]:
    """One Zipkin v2 span, and the resource attributes (service) its endpoint names."""
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
    resource = {"service.name": service} if isinstance(service, str) else {}
    events = tuple(
        RawEvent(_text(note.get("value")), {"timestamp": note.get("timestamp")})
        for note in item.get("annotations") or ()
        if isinstance(note, dict)
    )
    scope = attributes.get("otel.scope.name") or attributes.get("otel.library.name")
    span = _span(
        _text(item.get("name")),
        normalize_id(item.get("traceId"), 32),
        normalize_id(item.get("id")),
        normalize_id(item.get("parentId")),
        start,
        end,
        status,
        attributes,
        _text(scope),
    )
    return span._replace(events=events), resource


def _span(
    name: str,
    trace_id: str,
    span_id: str,
    parent_id: str,
    start: int,
    end: int,
    status: StepStatus,
    attributes: dict[str, Any],
    scope: str,
) -> RawSpan:
    return _new_span(
        RawSpan, (0, name, trace_id, span_id, parent_id, start, end, status, attributes, (), scope)
    )


def _json_object(value: object) -> dict[str, Any]:
    """A mapping written as an object or as JSON text; anything else is empty."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return {}
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
