"""Jaeger query-API spans: tags, logs, references and the process they ran in."""

from __future__ import annotations

from typing import Any

from canon.gates.contracts.execution import StepStatus
from canon.gates.contracts.otel.rawspan import RawEvent, RawSpan
from canon.gates.contracts.otel.shapes import jaeger_parent, process_attributes
from canon.gates.contracts.otel.values import (
    decode_jaeger_tags,
    decode_status,
    normalize_id,
    to_nanos,
)


def jaeger_span(span: dict[str, Any]) -> tuple[RawSpan, dict[str, Any]]:
    """One Jaeger span (position 0), and the resource attributes of its own process."""
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
    resource = process_attributes(process) if isinstance(process, dict) else {}
    raw = RawSpan(
        0,
        _text(span.get("operationName")),
        normalize_id(span.get("traceID"), 32),
        normalize_id(span.get("spanID")),
        normalize_id(jaeger_parent(span)),
        start,
        end,
        status,
        tags,
        _jaeger_events(logs) if logs else (),
        _text(tags.get("otel.scope.name")),
    )
    return raw, resource


def _jaeger_events(logs: object) -> tuple[RawEvent, ...]:
    if not isinstance(logs, list):
        return ()
    out = []
    for log in logs:
        if isinstance(log, dict):
            fields = decode_jaeger_tags(log.get("fields"))
            out.append(RawEvent(_text(fields.get("event")), fields))
    return tuple(out)


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
