"""AWS Bedrock AgentCore session exports: the evaluation input ``{"sessionSpans": [...]}`` and
the CLI's CloudWatch Logs Insights rows ``{timestamp, raw_otel_json}`` (the JSON as text).
What they hold (spans and log records, mixed) is read as a file is."""

from __future__ import annotations

from typing import Any

from canon.gates.contracts.otel.formats.base import SpanSink, TraceFormat
from canon.gates.contracts.otel.shapes import json_object

_SESSION_KEYS = ("sessionSpans", "raw_otel_json")


def _held(value: object) -> bool:
    """Whether a session key's value holds spans: JSON, or an object written as JSON text."""
    if isinstance(value, str):
        return value.lstrip().startswith("{")
    return isinstance(value, (list, dict))


def _claims(raw: dict[str, Any]) -> bool:
    return ("sessionSpans" in raw and _held(raw["sessionSpans"])) or (
        "raw_otel_json" in raw and _held(raw["raw_otel_json"])
    )


def _read(raw: dict[str, Any], sink: SpanSink, where: str) -> None:
    key = next(key for key in _SESSION_KEYS if key in raw and _held(raw[key]))
    inner = raw[key]
    if isinstance(inner, str):
        inner = json_object(inner)
        if isinstance(inner, str):
            raise sink.fail(f"text under {key!r} at {where} that is not a JSON object")
    sink.read(inner, f"{where}.{key}")


FORMAT = TraceFormat(
    name="agentcore",
    title="AWS Bedrock AgentCore",
    expected="an AgentCore export",
    shape='evaluation input `{"sessionSpans": [...]}`, also inside the Evaluate request or a '
    'code-based evaluator\'s Lambda event (`{"evaluationInput": {"sessionSpans": [...]}, '
    "...}`), and the CLI's CloudWatch Logs Insights rows `[{timestamp, raw_otel_json}]`, "
    "spans and log records mixed",
    learned_from="bedrock-agentcore-starter-toolkit (rows), strands-evals (ADOT spans); the "
    "envelopes are built by the tests around those spans: no recorded one was found",
    claims=_claims,
    keys=_SESSION_KEYS,
    read=_read,
)
