"""OpenAI Agents SDK trace exports: the items its tracing exports (``Trace.export()``,
``Span.export()``), one JSON object each, as JSON lines, an array, or the ingest payload its
exporter posts (``{"data": [...]}``).

A span (``"object": "trace.span"``) is ``id``, ``trace_id``, ``parent_id``, ``started_at``,
``ended_at``, ``error`` and its ``span_data`` by type: ``agent`` (an agent, by ``name``),
``function`` (a tool call, by ``name``, with ``input``/``output``), ``generation`` and
``response`` (model calls; ``input``/``output`` messages, ``model``), ``handoff``,
``guardrail``, ``custom`` and ``mcp_tools`` (steps). A trace item (``"object": "trace"``)
holds no step. Kinds and payloads are written as OpenInference attributes (``records.py``).
"""

from __future__ import annotations

from typing import Any

from canon.gates.contracts.execution import StepStatus
from canon.gates.contracts.otel.formats.base import SpanSink, TraceFormat, Where, text, type_name
from canon.gates.contracts.otel.formats.records import record_attributes, record_id, record_span

_OBJECTS = ("trace", "trace.span")
_EXTRAS = frozenset({"from_agent", "to_agent", "server", "triggered", "response_id"})


def _claims(raw: dict[str, Any]) -> bool:
    if raw.get("object") in _OBJECTS:
        return True
    data = raw.get("data")
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(item, dict) and item.get("object") in _OBJECTS for item in data)
    )


def _read(raw: dict[str, Any], sink: SpanSink, where: str) -> None:
    if raw.get("object") in _OBJECTS:
        _item(raw, sink, where)
        return
    for at, item in enumerate(raw["data"]):
        _item(item, sink, f"{where}.data[{at}]")


def _item(item: dict[str, Any], sink: SpanSink, where: str) -> None:
    if item.get("object") == "trace":
        name = item.get("workflow_name")
        if isinstance(name, str) and name:
            sink.add_resource({"openai_agents.workflow_name": name})
        return
    span_id = record_id(item.get("id"))
    data = item.get("span_data")
    if not span_id:
        raise sink.fail(f"an OpenAI Agents span without an id at {where}")
    if not isinstance(data, dict) or not isinstance(data.get("type"), str):
        found = type_name(data) if not isinstance(data, dict) else "no type"
        raise sink.fail(f"an OpenAI Agents span whose span_data is {found} at {where}")
    kind = data["type"]
    name = text(data.get("name")) or kind
    if kind == "handoff":
        name = f"handoff {text(data.get('from_agent'))} -> {text(data.get('to_agent'))}"
    attributes = record_attributes(
        kind, name, data.get("input"), data.get("output"), data.get("model")
    )
    attributes["openai_agents.span_type"] = kind
    for key in _EXTRAS.intersection(data):
        if data[key] is not None:
            attributes[f"openai_agents.{key}"] = data[key]
    error = item.get("error")
    status: StepStatus = "error" if error not in (None, {}, "") else "unset"
    ids = (record_id(item.get("trace_id"), 32), span_id, record_id(item.get("parent_id")))
    times = (item.get("started_at"), item.get("ended_at"))
    sink.add(record_span(sink, ids, name, times, status, attributes, "openai_agents"))


FORMAT = TraceFormat(
    name="openai-agents",
    title="OpenAI Agents SDK trace export",
    expected="an OpenAI Agents SDK export",
    shape='its exported items (`"object": "trace.span"` and `"trace"`) as JSON lines, an array '
    'or the ingest payload `{"data": [...]}`; `span_data` by `type`: `agent`, `function` (a '
    "tool call with `input`/`output`), `generation`/`response` (model calls), `handoff`, "
    "`guardrail`, `custom`, `mcp_tools`; `error` fails the step",
    learned_from="no public recording was found: tested on examples written for the tests "
    "from the SDK's `export()`",
    claims=_claims,
    keys=("object", "data"),
    read=_read,
    at=(Where.DOCUMENT, Where.ITEM),
)
