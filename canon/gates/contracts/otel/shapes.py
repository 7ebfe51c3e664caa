"""Field lookups shared by readers: an OTel SDK span's ids and times, a span written as JSON text.

Each takes one parsed span (or process) object and returns raw field values; decoding them
(ids, times, attributes) is ``values.py``'s job.
"""

from __future__ import annotations

import json
from typing import Any


def sdk_fields(span: dict[str, Any]) -> tuple[object, object, object, object, object]:
    """Ids and times of a span written by an OTel SDK (or any other camel/snake mix)."""
    get = span.get
    context = get("context") or get("spanContext")  # Python SDK, JS SDK
    ctx = context if isinstance(context, dict) else {}
    trace_id = get("traceId") or get("trace_id") or ctx.get("trace_id") or ctx.get("traceId")
    span_id = get("spanId") or get("span_id") or ctx.get("span_id") or ctx.get("spanId")
    parent: object = get("parentSpanId")
    if parent is None:
        parent = get("parent_span_id") or get("parent_id") or get("parent")
        if parent is None:
            parent = get("parentSpanContext")  # JS SDK 2.x
        if isinstance(parent, dict):
            parent = parent.get("span_id") or parent.get("spanId")
    start = get("startTimeUnixNano")
    if start is None:
        start = get("start_time_unix_nano") or get("start_time") or get("startTime")
    end = get("endTimeUnixNano")
    if end is None:
        end = get("end_time_unix_nano") or get("end_time") or get("endTime")
    return trace_id, span_id, parent, start, end


def json_object(text: str) -> object:
    """The JSON object a span list item holds as text, or the text itself."""
    stripped = text.lstrip()
    if not stripped.startswith("{"):
        return text
    try:
        return json.loads(stripped)
    except (ValueError, RecursionError):
        return text
