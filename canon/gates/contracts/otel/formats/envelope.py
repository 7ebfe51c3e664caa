"""API responses that wrap an export (``{"result": {"resourceSpans": ...}}``, Jaeger api/v3),
and AgentCore's evaluation request or Lambda event (``{"evaluationInput": {...}}``): the
first of those keys holding an object is read as the file. Asked last (rank 2)."""

from __future__ import annotations

from typing import Any

from canon.gates.contracts.otel.formats.base import SpanSink, TraceFormat

_ENVELOPES = ("result", "trace", "data", "evaluationInput")


def _claims(raw: dict[str, Any]) -> bool:
    return any(isinstance(raw.get(key), dict) for key in _ENVELOPES)


def _read(raw: dict[str, Any], sink: SpanSink, where: str) -> None:
    key = next(key for key in _ENVELOPES if isinstance(raw.get(key), dict))
    sink.read(raw[key], f"{where}.{key}")


FORMAT = TraceFormat(
    name="envelope",
    title="API response envelope",
    expected="",  # it wraps one of the others
    shape='`{"result": {...}}`, `{"trace": {...}}`, `{"data": {...}}` or '
    '`{"evaluationInput": {...}}` around any format here, when no other claims the object',
    learned_from="Jaeger api/v3",
    claims=_claims,
    keys=_ENVELOPES,
    read=_read,
    rank=2,
)
