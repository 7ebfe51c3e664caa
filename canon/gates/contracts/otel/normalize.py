"""From parsed trace JSON to an ``Execution``: the normalizer's entry points.

One pass over the spans builds every step (every span is a step, the root included, so a
single-span trace or a partial trace loses nothing); tool arguments and results are parsed
only for tool-call steps, and only when something reads them. The request and the answer
are read from the root first, then from the other spans (request: earliest first; answer:
container-level final output, then the latest model or agent span that has one).
``metadata`` = resource attributes of the whole file (later resources win), then the
caller's overlay.

Plain OTLP JSON spans stay parsed JSON until a step is built from them (``steps.py``);
only the spans the request, the answer, the run id and the framework are read from are
ever decoded whole.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Callable, Mapping
from itertools import islice
from operator import le
from typing import Any

from canon.gates.contracts.execution import Execution, Step
from canon.gates.contracts.otel.attributes import KVAttributes
from canon.gates.contracts.otel.errors import TraceError
from canon.gates.contracts.otel.frameworks import DETECT_KEYS, FrameworkDetector
from canon.gates.contracts.otel.spans import OtlpRun, RawSpan, collect_spans, otlp_raw_span
from canon.gates.contracts.otel.steps import otlp_steps, step_from_raw
from canon.gates.contracts.otel.text import answer_text, final_output_text, request_text
from canon.gates.contracts.otel.tree import root_position
from canon.gates.contracts.otel.values import normalize_id

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
    spans = _SpanSources(batch.entries)
    steps: list[Step] = []
    starts: list[int] = []
    span_ids: list[str] = []
    parent_ids: list[str] = []
    for entry in batch.entries:
        if isinstance(entry, OtlpRun):
            run_starts, run_ids, run_parents = otlp_steps(entry, steps)
            starts += run_starts
            span_ids += run_ids
            parent_ids += run_parents
        else:
            step = step_from_raw(entry)
            steps.append(step)
            starts.append(step.start_ns)
            span_ids.append(step.span_id)
            parent_ids.append(step.parent_id)
    if all(map(le, starts, islice(starts, 1, None))):
        order = list(range(len(steps)))  # already in start order (checked in C)
    else:
        # a stable sort on start time alone keeps file order for ties
        order = sorted(range(len(steps)), key=starts.__getitem__)
        steps = list(map(steps.__getitem__, order))
        span_ids = list(map(span_ids.__getitem__, order))
        parent_ids = list(map(parent_ids.__getitem__, order))
    root_at = root_position(span_ids, parent_ids)
    root = spans.decoded(order[root_at])
    input_text = _safe(request_text, root)
    if not input_text:
        for position, original in enumerate(order):
            if position != root_at:
                input_text = _safe(request_text, spans.decoded(original))
                if input_text:
                    break
        else:
            input_text = None
    output_text = _safe(answer_text, root) or final_output_text(batch.final_output)
    if output_text is None:
        for position in range(len(steps) - 1, -1, -1):
            if steps[position].kind in _ANSWER_KINDS:
                output_text = _safe(answer_text, spans.decoded(order[position]))
                if output_text:
                    break
    merged: dict[str, Any] = dict(batch.resource)
    if metadata:
        merged.update(metadata)
    return Execution(
        execution_id=_execution_id(spans, order, root_at, steps),
        steps=tuple(steps),
        input_text=input_text,
        output_text=output_text,
        metadata=merged,
        framework=_framework(spans, order, steps),
    )


class _SpanSources:
    """The spans behind the steps, by file position; OTLP JSON ones decode on request."""

    __slots__ = ("_decoded", "_run_starts", "_runs")

    def __init__(self, entries: list[RawSpan | OtlpRun]) -> None:
        self._runs = [entry for entry in entries if isinstance(entry, OtlpRun)]
        self._run_starts = [run.first_position for run in self._runs]
        self._decoded = {entry.position: entry for entry in entries if isinstance(entry, RawSpan)}

    def _locate(self, position: int) -> tuple[OtlpRun | None, int]:
        """The run holding ``position`` and the offset in it, or ``(None, position)``."""
        at = bisect_right(self._run_starts, position) - 1
        if at >= 0:
            run = self._runs[at]
            offset = position - run.first_position
            if offset < len(run.spans):
                return run, offset
        return None, position

    def decoded(self, position: int) -> RawSpan:
        """The span at file ``position``, fully decoded."""
        run, offset = self._locate(position)
        if run is not None:
            return otlp_raw_span(run.spans[offset], run.scope, position)
        return self._decoded[position]

    def name_scope(self, position: int) -> tuple[str, str]:
        """The raw span name and the scope name of the span at file ``position``."""
        run, offset = self._locate(position)
        if run is None:
            span = self.decoded(position)
            return span.name, span.scope
        name = run.spans[offset].get("name")
        return (name if isinstance(name, str) else ""), run.scope

    def trace_id(self, position: int) -> str:
        """The trace id of the span at file ``position``."""
        run, offset = self._locate(position)
        if run is None:
            return self.decoded(position).trace_id
        return normalize_id(run.spans[offset].get("traceId"), 32)


def _framework(spans: _SpanSources, order: list[int], steps: list[Step]) -> str:
    detector = FrameworkDetector()
    for position, step in enumerate(steps):
        name, scope = spans.name_scope(order[position])
        attrs = step.attributes
        if isinstance(attrs, KVAttributes):
            attrs = attrs.subset(DETECT_KEYS)
        detector.observe(name, scope, attrs)
        if detector.done:
            break
    return detector.result()


def _safe(read: Callable[[RawSpan], str | None], span: RawSpan) -> str | None:
    try:
        return read(span)
    except RecursionError:
        return None


def _execution_id(spans: _SpanSources, order: list[int], root_at: int, steps: list[Step]) -> str:
    trace_id = spans.trace_id(order[root_at])
    if trace_id:
        return trace_id
    for original in order:
        trace_id = spans.trace_id(original)
        if trace_id:
            return trace_id
    return steps[root_at].span_id or "unknown"
