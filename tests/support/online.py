"""Live-traffic test material: the example's billing trace under any trace id and answer."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

EXAMPLE_TRACE = (
    Path(__file__).resolve().parents[2] / "examples" / "traces" / "duplicate-charge.json"
)
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
