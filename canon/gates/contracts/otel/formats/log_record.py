"""One OpenTelemetry log record on its own (ADOT, CloudWatch: ``body``, ``severityNumber`` ...
and no ``startTimeUnixNano``): joined to the span it names, like ``resourceLogs``' records."""

from __future__ import annotations

from typing import Any

from canon.gates.contracts.otel.formats.base import SpanSink, TraceFormat
from canon.gates.contracts.otel.logs import LOG_MARKERS, is_log_record


def _read(raw: dict[str, Any], sink: SpanSink, where: str) -> None:
    sink.reject(raw)  # no span: counted, and kept as the log record it is


FORMAT = TraceFormat(
    name="log-record",
    title="OpenTelemetry log record",
    expected="",  # a log record is no trace
    shape="an object with `body`, `severityNumber`/`severity_number` or "
    "`severityText`/`severity_text` and no `startTimeUnixNano` (ADOT, CloudWatch): joined to "
    "its span as an event",
    learned_from="bedrock-agentcore-starter-toolkit (CloudWatch rows), AgentOps",
    claims=is_log_record,
    keys=LOG_MARKERS,
    read=_read,
)
