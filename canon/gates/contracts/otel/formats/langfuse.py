"""Langfuse trace exports: ``{trace, observations[]}`` or the API's trace with its
``observations`` inside.

An observation's OTel attributes sit under ``metadata.attributes`` (a JSON string or an
object); its Langfuse ``type`` is kept as ``langfuse.observation.type`` and its
``input``/``output`` as ``input.value`` and ``output.value`` when the attributes hold no
such key. The trace's ``output`` is the run's answer when no span gives one.
"""

from __future__ import annotations

import json
from typing import Any

from canon.gates.contracts.execution import StepStatus
from canon.gates.contracts.otel.formats.base import SpanSink, TraceFormat, text
from canon.gates.contracts.otel.rawspan import RawSpan
from canon.gates.contracts.otel.values import normalize_id, to_nanos


def _claims(raw: dict[str, Any]) -> bool:
    """Whether a JSON object is a Langfuse trace export (its observations listed)."""
    if isinstance(raw.get("observations"), list):
        return True
    trace = raw.get("trace")
    return isinstance(trace, dict) and isinstance(trace.get("observations"), list)


def _read(raw: dict[str, Any], sink: SpanSink, where: str) -> None:
    trace = raw.get("trace") if isinstance(raw.get("trace"), dict) else raw
    assert isinstance(trace, dict)
    observations = raw.get("observations")
    if not isinstance(observations, list):
        observations = trace.get("observations")
    resource: dict[str, Any] = {}
    trace_meta = json_mapping(trace.get("metadata"))
    resource.update(json_mapping(trace_meta.get("resourceAttributes")))
    spans: list[RawSpan] = []
    first = sink.count
    for item in observations if isinstance(observations, list) else ():
        if not isinstance(item, dict):
            continue
        metadata = json_mapping(item.get("metadata"))
        attributes = dict(json_mapping(metadata.get("attributes")))
        resource.update(json_mapping(metadata.get("resourceAttributes")))
        kind = item.get("type")
        if isinstance(kind, str):
            attributes.setdefault("langfuse.observation.type", kind.upper())
        for field, key in (("input", "input.value"), ("output", "output.value")):
            value = item.get(field)
            if value is not None and key not in attributes:
                attributes[key] = value if isinstance(value, str) else json.dumps(value)
        if isinstance(item.get("model"), str):
            attributes.setdefault("gen_ai.request.model", item["model"])
        scope = json_mapping(metadata.get("scope")).get("name")
        status: StepStatus = "error" if item.get("level") == "ERROR" else "unset"
        start = to_nanos(item.get("startTime"))
        spans.append(
            RawSpan(
                first + len(spans),
                text(item.get("name")),
                normalize_id(item.get("traceId") or trace.get("id"), 32),
                normalize_id(item.get("id")),
                normalize_id(item.get("parentObservationId")),
                start,
                to_nanos(item.get("endTime")) or start,
                status,
                attributes,
                (),
                text(scope),
            )
        )
    sink.add_resource(resource)
    for span in spans:
        sink.add(span)
    output = trace.get("output")
    if output is not None and sink.final_output is None:
        sink.final_output = output


def json_mapping(value: object) -> dict[str, Any]:
    """A mapping written as an object or as JSON text; anything else is empty."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return {}
    return value if isinstance(value, dict) else {}


FORMAT = TraceFormat(
    name="langfuse",
    title="Langfuse trace export",
    expected="a Langfuse export",
    shape="`{trace, observations[]}` or the API's trace with `observations` inside; OTel "
    "attributes under `metadata.attributes`, `parentObservationId`, ISO times, observation "
    "`type` (`TOOL`, `AGENT`, `GENERATION` ...), `level: ERROR` fails the step, "
    "`input`/`output` kept as `input.value`/`output.value`",
    learned_from="langfuse/langfuse only (Microsoft Agent Framework, Koog, BeeAI): no other "
    "public project's export was found",
    claims=_claims,
    keys=("observations", "trace"),
    read=_read,
)
