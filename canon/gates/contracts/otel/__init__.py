"""OpenTelemetry trace normalizer: any supported trace export in, one ``Execution`` per run out.

Pure: it takes trace text or parsed JSON values and returns values; reading files is the
caller's job. ``TraceError`` (an ``InputError``) names the source and what was expected
whenever the input is not a trace or holds no spans.
"""

from __future__ import annotations

from canon.gates.contracts.otel.errors import TraceError
from canon.gates.contracts.otel.normalize import (
    normalize_trace,
    normalize_trace_text,
    normalize_traces,
    normalize_traces_text,
    parse_trace_text,
)

__all__ = [
    "TraceError",
    "normalize_trace",
    "normalize_trace_text",
    "normalize_traces",
    "normalize_traces_text",
    "parse_trace_text",
]
