"""Split telemetry: OpenTelemetry log records that carry a span's content, as span events.

The GenAI conventions and AWS ADOT can write prompts, answers and tool payloads as log
records (``gen_ai.user.message``, ``gen_ai.choice``, ``gen_ai.tool.message``, the single
``gen_ai.client.inference.operation.details`` event ...) that name their span by
``spanId``. Each record becomes a ``RawEvent`` of that span: its event name, its attributes,
and its body's fields, which is where the conventions put the content.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from canon.gates.contracts.otel.rawspan import RawEvent, RawSpan
from canon.gates.contracts.otel.values import decode_any_value, decode_kv_list, normalize_id

# The tags of an OTLP ``AnyValue`` object; a body with one of them alone is encoded.
_ANY_VALUE_TAGS = frozenset(
    {"stringValue", "intValue", "doubleValue", "boolValue", "arrayValue", "kvlistValue"}
)
_OTLP_LOG_KEYS = ("resourceLogs", "resource_logs")
_SCOPE_LOG_KEYS = ("scopeLogs", "scope_logs", "instrumentationLibraryLogs")
_RECORD_KEYS = ("logRecords", "log_records")
LOG_MARKERS = ("body", "severity_number", "severityNumber", "severity_text", "severityText")


class LogEvent(NamedTuple):
    """One log record turned into an event of the span it names."""

    trace_id: str
    span_id: str
    event: RawEvent


def is_log_record(item: dict[str, Any]) -> bool:
    """Whether a JSON object is an OpenTelemetry log record rather than a span."""
    return any(key in item for key in LOG_MARKERS) and "startTimeUnixNano" not in item


def otlp_log_records(document: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The log records of an OTLP ``resourceLogs`` document, or None when it is none."""
    blocks = next((document[key] for key in _OTLP_LOG_KEYS if key in document), None)
    if blocks is None:
        return None
    records: list[dict[str, Any]] = []
    for block in blocks if isinstance(blocks, list) else ():
        if not isinstance(block, dict):
            continue
        for scope_key in _SCOPE_LOG_KEYS:
            for scope in _dicts(block.get(scope_key)):
                for record_key in _RECORD_KEYS:
                    records.extend(_dicts(scope.get(record_key)))
    return records


def log_event(record: dict[str, Any]) -> LogEvent:
    """The span event a log record stands for (any shape: OTLP JSON, ADOT, CloudWatch)."""
    attributes = decode_kv_list(record.get("attributes"))
    name = record.get("eventName") or record.get("event_name") or attributes.get("event.name")
    body = _body(record.get("body"))
    fields: dict[str, Any] = dict(attributes)
    if isinstance(body, dict):
        for key, value in body.items():
            fields.setdefault(str(key), value)
        for side, key in (("input", "gen_ai.input.messages"), ("output", "gen_ai.output.messages")):
            # ADOT's LangChain records: {"input": {"messages": [...]}, "output": {...}}
            inner = body.get(side)
            if isinstance(inner, dict) and isinstance(inner.get("messages"), list):
                fields.setdefault(key, inner["messages"])
    elif body is not None:
        fields.setdefault("content", body)  # a bare string body is the message text
    return LogEvent(
        normalize_id(record.get("traceId") or record.get("trace_id"), 32),
        normalize_id(record.get("spanId") or record.get("span_id")),
        RawEvent(name if isinstance(name, str) else "", fields),
    )


def join_events(spans: list[RawSpan], events: Iterable[LogEvent]) -> tuple[list[RawSpan], int]:
    """The spans with each log event added to the span it names; and how many named none."""
    by_span: dict[str, list[RawEvent]] = {}
    unjoined = 0
    known = {span.span_id for span in spans if span.span_id}
    for found in events:
        if found.span_id and found.span_id in known:
            by_span.setdefault(found.span_id, []).append(found.event)
        else:
            unjoined += 1
    if not by_span:
        return spans, unjoined
    joined = [
        span._replace(events=span.events + tuple(by_span[span.span_id]))
        if span.span_id in by_span
        else span
        for span in spans
    ]
    return joined, unjoined


def _body(raw: object) -> Any:
    """A log body: OTLP encodes it as an ``AnyValue``, ADOT and CloudWatch write plain JSON."""
    if isinstance(raw, dict) and len(raw) == 1 and next(iter(raw)) in _ANY_VALUE_TAGS:
        return decode_any_value(raw)
    return raw


def _dicts(value: object) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
