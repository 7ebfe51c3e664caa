"""A span list: ``{"spans": [...]}`` of spans in OTLP JSON or OTel SDK shape (any-agent, with
its ``final_output`` beside them; ADOT/CloudWatch session exports; Okahu). A bare array of
spans needs no entry: the collector reads each element (``otel_span``)."""

from __future__ import annotations

from typing import Any

from canon.gates.contracts.otel.formats.agentops import holds_rows
from canon.gates.contracts.otel.formats.base import SpanSink, TraceFormat, type_name
from canon.gates.contracts.otel.formats.jaeger import is_trace
from canon.gates.contracts.otel.formats.otel_span import read_span


def _claims(raw: dict[str, Any]) -> bool:
    return "spans" in raw and not is_trace(raw) and not holds_rows(raw)


def _read(raw: dict[str, Any], sink: SpanSink, where: str) -> None:
    spans = raw["spans"]
    if not isinstance(spans, list):
        raise sink.fail(f"'spans' holding {type_name(spans)} at {where}")
    if "final_output" in raw:
        sink.final_output = raw["final_output"]  # any-agent writes the run's answer here
    for span in spans:
        read_span(span, "", sink)


FORMAT = TraceFormat(
    name="span-list",
    title="span list",
    expected="a span list",
    shape='`[...]` or `{"spans": [...]}` (any-agent\'s `final_output`, ADOT/CloudWatch '
    "session exports, Okahu) of spans in OTel span shape (below); JSON-encoded span strings",
    learned_from="any-agent, strands-evals, Monocle, AgentOps",
    claims=_claims,
    keys=("spans",),
    read=_read,
)
