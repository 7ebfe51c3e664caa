"""OTLP JSON logs (``resourceLogs``): each log record is joined, as an event, to the span it
names (split telemetry, ``logs.py``); a file of log records and no spans is no trace."""

from __future__ import annotations

from typing import Any

from canon.gates.contracts.otel.formats.base import SpanSink, TraceFormat
from canon.gates.contracts.otel.logs import otlp_log_records


def _claims(raw: dict[str, Any]) -> bool:
    return "resourceLogs" in raw or "resource_logs" in raw


def _read(raw: dict[str, Any], sink: SpanSink, where: str) -> None:
    for record in otlp_log_records(raw) or ():
        sink.log(record)  # in resourceLogs, a record is a log whatever it holds


FORMAT = TraceFormat(
    name="otlp-logs",
    title="OTLP JSON logs",
    expected="",  # logs alone are no trace
    shape="`resourceLogs`/`scopeLogs`/`logRecords`: each record becomes an event of the span "
    "it names by `spanId` (split telemetry, below); records that name no span are counted",
    learned_from="opentelemetry-proto and opentelemetry-specification examples, swift-otel "
    "(a Collector's log output)",
    claims=_claims,
    keys=("resourceLogs", "resource_logs"),
    read=_read,
)
