"""Grouped exports: ``{"traces": [trace, ...]}``, each trace any document Canon reads (a span
list ``{"spans": [...]}``, an AgentOps trace, a Jaeger trace ...), read in turn as the
file's documents; a listed trace Canon cannot read refuses the file, naming its place."""

from __future__ import annotations

from typing import Any

from canon.gates.contracts.otel.formats.base import SpanSink, TraceFormat
from canon.gates.contracts.otel.formats.records import listed_records, refuse_held


def _claims(raw: dict[str, Any]) -> bool:
    traces = raw.get("traces")
    return isinstance(traces, list) and any(isinstance(trace, dict) for trace in traces)


def _read(raw: dict[str, Any], sink: SpanSink, where: str) -> None:
    refuse_held(raw, frozenset({"traces"}), sink, where)
    for _, trace, place in listed_records(raw, ("traces",), sink, where, "a trace"):
        sink.read(trace, place)


FORMAT = TraceFormat(
    name="grouped",
    title="grouped traces",
    expected="",  # it groups the others
    shape='`{"traces": [{"spans": [...]}, ...]}`: each listed trace in any format here',
    learned_from="AgentOps (its trace rows); the groups are built by the tests around real "
    "spans: no recorded one was found",
    claims=_claims,
    keys=("traces",),
    read=_read,
)
