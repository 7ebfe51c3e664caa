"""Live-traffic test material: the example's billing trace under any trace id and answer."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE_TRACE = EXAMPLES / "traces" / "duplicate-charge.json"
_TEMPLATE: dict[str, Any] = json.loads(EXAMPLE_TRACE.read_text())


def trace_id(number: int) -> str:
    """A W3C trace id (32 hex digits) for ``number``."""
    return f"{number * 2654435761 % (1 << 120) + (1 << 124):032x}"


def trace_document(ident: str, answer: str | None = None, *, skip_lookup: bool = False) -> dict:
    """The example trace with trace id ``ident``; ``answer`` replaces the agent's reply;
    ``skip_lookup`` drops the invoice lookup, so the example contract FAILs it."""
    document = copy.deepcopy(_TEMPLATE)
    scope = document["resourceSpans"][0]["scopeSpans"][0]
    if skip_lookup:
        scope["spans"] = [s for s in scope["spans"] if "lookup_invoice" not in s["name"]]
    for span in scope["spans"]:
        span["traceId"] = ident
        if answer is not None and "parentSpanId" not in span:
            for attribute in span["attributes"]:
                if attribute["key"] == "gen_ai.output.messages":
                    message = [
                        {"role": "assistant", "parts": [{"type": "text", "content": answer}]}
                    ]
                    attribute["value"] = {"stringValue": json.dumps(message)}
    return document


def spans_of(document: dict) -> list[dict]:
    """The document's spans (root first)."""
    return list(document["resourceSpans"][0]["scopeSpans"][0]["spans"])


def _attribute_value(value: dict) -> Any:
    for kind in ("stringValue", "boolValue", "doubleValue"):
        if kind in value:
            return value[kind]
    if "intValue" in value:
        return int(value["intValue"])
    raise ValueError(f"unexpected attribute value {value}")


def emit_example(tracer: Any, answer: str | None = None) -> str:
    """Record the example trace's spans through an OpenTelemetry SDK ``tracer`` (its
    exporter sends them); returns the new trace's id in hex."""
    from opentelemetry import trace

    spans = spans_of(trace_document("0" * 32, answer))
    base = time.time_ns() - 5_000_000_000
    offset = int(spans[0]["startTimeUnixNano"])
    opened: dict[str, Any] = {}
    for span in spans:  # the root first, then its children (the example is one level deep)
        parent = opened.get(span.get("parentSpanId", ""))
        context = None if parent is None else trace.set_span_in_context(parent)
        attributes = {a["key"]: _attribute_value(a["value"]) for a in span["attributes"]}
        opened[span["spanId"]] = tracer.start_span(
            span["name"],
            context=context,
            attributes=attributes,
            start_time=base + int(span["startTimeUnixNano"]) - offset,
        )
    for span in reversed(spans):  # children end first, the root last (as exporters see it)
        opened[span["spanId"]].end(end_time=base + int(span["endTimeUnixNano"]) - offset)
    return f"{opened[spans[0]['spanId']].get_span_context().trace_id:032x}"
