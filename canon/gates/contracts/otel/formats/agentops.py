"""AgentOps trace exports: ``{"trace_id": ..., "spans": [...]}`` as the AgentOps API returns
a trace, each span a row of its span table: ``span_id``, ``parent_span_id``, ``span_name``,
``span_kind``, ``status_code``, ``duration`` in ns, ``resource_attributes``, and the
span's OTel attributes nested by their dotted parts under ``span_attributes``
(``{"gen_ai": {"request": {"model": ...}}}``), lists of one-key objects numbering the
items (``{"completion": [{"0": {...}}]}``).

The nested attributes are flattened back to their dotted keys (``gen_ai.request.model``,
``gen_ai.completion.0.content``), the conventions Canon reads; AgentOps' own kind of a row
(``span_type``: ``agent``, ``request`` for a model request, ``tool``) and its workflow's
``workflow.input``/``workflow.final_output`` are read as OpenInference's kind, input and
output; a span without a ``trace_id`` takes the enclosing object's.
"""

from __future__ import annotations

from typing import Any

from canon.gates.contracts.execution import StepStatus
from canon.gates.contracts.otel.formats.base import (
    SpanSink,
    TraceFormat,
    text,
    type_name,
)
from canon.gates.contracts.otel.formats.records import listed_records, refuse_held
from canon.gates.contracts.otel.rawspan import RawSpan
from canon.gates.contracts.otel.values import normalize_id, to_nanos

# AgentOps' own kind of a span row (``span_type``) -> its OpenInference span kind
_KINDS = {"agent": "AGENT", "request": "LLM", "tool": "TOOL"}
_MAX_DEPTH = 64  # attribute nesting deeper than any convention: refused, not a recursion error
# a row's own fields that hold lists or objects (no spans of the trace)
_ROW_PARTS = frozenset({"span_attributes", "attributes", "resource_attributes"})
_ROW_PARTS |= {"event_timestamps", "event_names", "event_attributes", "link_trace_ids"}
_ROW_PARTS |= {"link_span_ids", "link_trace_states", "link_attributes"}


def holds_rows(raw: dict[str, Any]) -> bool:
    """Whether a JSON object lists AgentOps span rows under ``spans``."""
    spans = raw.get("spans")
    return isinstance(spans, list) and any(
        isinstance(span, dict) and "span_attributes" in span for span in spans
    )


def _read(raw: dict[str, Any], sink: SpanSink, where: str) -> None:
    refuse_held(raw, frozenset({"spans"}), sink, where)
    trace = normalize_id(raw.get("trace_id"), 32)
    for _, row, place in listed_records(raw, ("spans",), sink, where, "an AgentOps span row"):
        _row(row, trace, sink, place)


def _row(row: dict[str, Any], trace: str, sink: SpanSink, where: str) -> None:
    refuse_held(row, _ROW_PARTS, sink, where)
    span_id = normalize_id(row.get("span_id"))
    name = row.get("span_name")
    if not span_id or not isinstance(name, str) or not name.strip():
        raise sink.fail(f"an AgentOps span row without a span_id or a span_name at {where}")
    attributes: dict[str, Any] = {}
    nested = row.get("span_attributes")
    if not isinstance(nested, dict):
        raise sink.fail(f"'span_attributes' holding {type_name(nested)} at {where}")
    _flatten(nested, "", attributes, 0, sink, where)
    own = row.get("attributes")
    if isinstance(own, dict):
        for key, value in own.items():
            attributes.setdefault(str(key), value)
    kind = _KINDS.get(text(row.get("span_type")))
    if kind is not None:
        attributes.setdefault("openinference.span.kind", kind)
    for field, key in (
        ("workflow.input", "input.value"),
        ("workflow.final_output", "output.value"),
    ):
        value = attributes.get(field)
        if value not in (None, "", "null"):
            attributes.setdefault(key, value)
    kind = row.get("span_kind")
    if isinstance(kind, str) and kind:
        attributes.setdefault("span.kind", kind.lower())
    resource = row.get("resource_attributes")
    if isinstance(resource, dict):
        sink.add_resource(resource)
    start = to_nanos(row.get("start_time"))
    duration = row.get("duration")
    end = start + duration if isinstance(duration, int) and duration > 0 and start else start
    code = text(row.get("status_code")).upper()
    status: StepStatus = "error" if code in ("ERROR", "STATUS_CODE_ERROR") else "unset"
    sink.add(
        RawSpan(
            sink.count,
            name,
            normalize_id(row.get("trace_id"), 32) or trace,
            span_id,
            normalize_id(row.get("parent_span_id")),
            start,
            end,
            status,
            attributes,
            (),
            text(attributes.get("instrumentation.name") or attributes.get("library.name")),
        )
    )


def _flatten(
    value: dict[str, Any], prefix: str, out: dict[str, Any], depth: int, sink: SpanSink, where: str
) -> None:
    """``value``'s leaves into ``out`` under their dotted keys."""
    if depth > _MAX_DEPTH:
        raise sink.fail(f"span_attributes nested over {_MAX_DEPTH} deep at {where}")
    for key, inner in value.items():
        dotted = f"{prefix}{key}"
        if isinstance(inner, dict):
            _flatten(inner, f"{dotted}.", out, depth + 1, sink, where)
        elif isinstance(inner, list) and inner and all(isinstance(i, dict) for i in inner):
            for item in inner:  # [{"0": {...}}, {"1": {...}}]: the items, numbered by key
                _flatten(item, f"{dotted}.", out, depth + 1, sink, where)
        else:
            out.setdefault(dotted, inner)


FORMAT = TraceFormat(
    name="agentops",
    title="AgentOps trace export",
    expected="an AgentOps export",
    shape='`{"trace_id": ..., "spans": [...]}` of span rows: `span_id`, `parent_span_id`, '
    "`span_name`, `status_code`, `duration` in ns, OTel attributes nested under "
    "`span_attributes` (flattened back to dotted keys), `resource_attributes`; a row without "
    "a `trace_id` takes the enclosing object's",
    learned_from="AgentOps-AI/agentops (an OpenAI Agents SDK run)",
    claims=holds_rows,
    keys=("spans",),
    read=_read,
)
