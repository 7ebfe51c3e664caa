"""From parsed trace JSON to an ``Execution``: the normalizer's entry points.

One pass over the spans builds every step (every span is a step, the root included, so a
single-span trace or a partial trace loses nothing); tool arguments and results are parsed
only for tool-call steps. The request and the answer are read from the root first, then from
the other spans (request: earliest first; answer: container-level final output, then the
latest model or agent span that has one). ``metadata`` = resource attributes of the whole
file (later resources win), then the caller's overlay.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from canon.gates.contracts.execution import DataSource, Execution, Step
from canon.gates.contracts.otel.classify import classify
from canon.gates.contracts.otel.errors import TraceError
from canon.gates.contracts.otel.frameworks import FrameworkDetector
from canon.gates.contracts.otel.payloads import tool_io
from canon.gates.contracts.otel.spans import RawSpan, collect_spans
from canon.gates.contracts.otel.text import answer_text, final_output_text, request_text
from canon.gates.contracts.otel.tree import choose_root, in_start_order

_ANSWER_KINDS = frozenset({"model_call", "agent"})


def parse_trace_text(text: str, *, source: str = "<trace>") -> object:
    """Parse a trace file's text: one JSON document, or JSON lines (a list of documents)."""
    if not isinstance(text, str):
        raise TraceError(f"{source}: expected trace text (str), got {type(text).__name__}")
    if not text.strip():
        raise TraceError(f"{source}: the file is empty; expected a JSON trace export")
    try:
        return json.loads(text)
    except RecursionError as exc:
        raise TraceError(f"{source}: JSON nested too deeply to be a trace") from exc
    except json.JSONDecodeError as first_error:
        documents = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                documents.append(json.loads(line))
            except (ValueError, RecursionError):
                raise TraceError(
                    f"{source}: not JSON: {first_error.msg} at line {first_error.lineno} "
                    f"column {first_error.colno}, and line {number} is not a JSON document "
                    "either; expected an OTLP/Jaeger JSON export or OTLP JSON lines"
                ) from first_error
        return documents


def normalize_trace(
    raw: object,
    *,
    metadata: Mapping[str, object] | None = None,
    source: str = "<trace>",
) -> Execution:
    """Normalize a parsed trace export into an ``Execution``; ``TraceError`` if it is none."""
    batch = collect_spans(raw, source=source)
    ordered = in_start_order(batch.spans)
    detector = FrameworkDetector()
    steps = []
    kinds: list[str] = []
    for span in ordered:
        step = _step(span)
        steps.append(step)
        kinds.append(step.kind)
        if not detector.done:
            detector.observe(span)
    root = choose_root(ordered)
    input_text = _first_text(request_text, root, ordered)
    output_text = _safe(answer_text, root) or final_output_text(batch.final_output)
    if output_text is None:
        for position in range(len(ordered) - 1, -1, -1):
            if kinds[position] in _ANSWER_KINDS:
                output_text = _safe(answer_text, ordered[position])
                if output_text:
                    break
    merged: dict[str, Any] = dict(batch.resource)
    if metadata:
        merged.update(metadata)
    return Execution(
        execution_id=_execution_id(root, ordered),
        steps=tuple(steps),
        input_text=input_text,
        output_text=output_text,
        metadata=merged,
        framework=detector.result(),
    )


def _step(span: RawSpan) -> Step:
    attrs = span.attributes
    kind, name = classify(span.name or "(unnamed span)", attrs)
    inputs: Any = None
    outputs: Any = None
    status = span.status
    if kind == "tool_call":
        try:
            inputs, outputs = tool_io(span)
        except RecursionError:  # absurdly nested payloads: keep the step, drop the payload
            inputs = outputs = None
        if status == "unset" and attrs.get("gen_ai.tool.status") in ("error", "failed"):
            status = "error"
    sources: tuple[DataSource, ...] = ()
    knowledge_base = attrs.get("aws.bedrock.knowledge_base.id") or attrs.get(
        "gen_ai.data_source.id"
    )
    if isinstance(knowledge_base, str) and knowledge_base:
        sources = (DataSource(knowledge_base, "knowledge_base"),)
    # positional arguments: Step is built once per span, keywords cost measurably more
    return Step(
        name,
        kind,
        span.span_id,
        span.parent_id,
        span.start_ns,
        span.end_ns,
        status,
        inputs,
        outputs,
        sources,
        attrs,
    )


def _safe(read: Callable[[RawSpan], str | None], span: RawSpan) -> str | None:
    try:
        return read(span)
    except RecursionError:
        return None


def _first_text(
    read: Callable[[RawSpan], str | None], root: RawSpan, ordered: list[RawSpan]
) -> str | None:
    found = _safe(read, root)
    if found:
        return found
    for span in ordered:
        if span is not root:
            found = _safe(read, span)
            if found:
                return found
    return None


def _execution_id(root: RawSpan, ordered: list[RawSpan]) -> str:
    if root.trace_id:
        return root.trace_id
    for span in ordered:
        if span.trace_id:
            return span.trace_id
    return root.span_id or "unknown"
