"""OTLP JSON metrics (``resourceMetrics``): a Collector file mixes them in; they hold no spans,
so they are counted and skipped."""

from __future__ import annotations

from typing import Any

from canon.gates.contracts.otel.formats.base import SpanSink, TraceFormat


def _claims(raw: dict[str, Any]) -> bool:
    return "resourceMetrics" in raw or "resource_metrics" in raw


def _read(raw: dict[str, Any], sink: SpanSink, where: str) -> None:
    sink.skip_metrics()


FORMAT = TraceFormat(
    name="otlp-metrics",
    title="OTLP JSON metrics",
    expected="",  # metrics are no trace
    shape="`resourceMetrics`: skipped and counted (a file of nothing else is named as "
    "metrics, not a trace)",
    learned_from="opentelemetry-proto and opentelemetry-specification examples",
    claims=_claims,
    keys=("resourceMetrics", "resource_metrics"),
    read=_read,
)
