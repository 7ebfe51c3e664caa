"""From parsed trace JSON to an ``Execution``: the normalizer's entry points.

Every span is a step, the root included, so a single-span trace or a partial trace loses
nothing. One pass over the spans finds each step's name, kind and status (what validation
reads); the whole ``Step`` values, with their attributes and tool arguments and results,
are built only when something reads ``execution.steps``. The request and the answer
are read from the root first, then from the other spans (request: earliest first; answer:
container-level final output, then the latest model or agent span that has one).
``metadata`` = resource attributes of the whole file (later resources win), then the
caller's overlay.

Plain OTLP JSON spans stay parsed JSON until a step is built from them (``steps.py``);
only the spans the request, the answer, the run id and the framework are read from are
decoded before that.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Callable, Mapping
from functools import partial
from itertools import chain, islice, repeat
from operator import itemgetter, le
from typing import Any

from canon.gates.contracts.execution import NO_PAYLOAD, Execution, Step, StepColumns, StepKind
from canon.gates.contracts.otel.attributes import KVAttributes
from canon.gates.contracts.otel.beeai import agent_recorded_calls
from canon.gates.contracts.otel.errors import TraceError
from canon.gates.contracts.otel.frameworks import (
    DETECT_KEYS,
    NAME_MARKS,
    STRONG_KEYS,
    FrameworkDetector,
    name_marks,
    weak_mark,
)
from canon.gates.contracts.otel.jsontext import loads
from canon.gates.contracts.otel.payloads import LazyToolPayload
from canon.gates.contracts.otel.rawspan import OtlpRun, RawSpan
from canon.gates.contracts.otel.runs import run_groups, split_runs
from canon.gates.contracts.otel.spans import SpanBatch, collect_spans, otlp_raw_span
from canon.gates.contracts.otel.steps import (
    as_nanos,
    nanos_column,
    otlp_columns,
    otlp_step,
    start_column,
    step_from_raw,
)
from canon.gates.contracts.otel.text import answer_text, final_output_text, request_text
from canon.gates.contracts.otel.tree import repeated_tool_calls, root_position, top_positions
from canon.gates.contracts.otel.values import decode_kv_list, normalize_id, to_nanos

_ANSWER_KINDS = frozenset({"model_call", "agent"})
_KEY = itemgetter("key")
_ATTRIBUTES = itemgetter("attributes")
# attribute keys of a span, as written -> (may name a framework, the convention they name)
_Layouts = dict[tuple[Any, ...], tuple[bool, str]]


def parse_trace_text(text: str, *, source: str = "<trace>") -> object:
    """Parse a trace file's text: one JSON document, or JSON lines (a list of documents)."""
    if not isinstance(text, str):
        raise TraceError(f"{source}: expected trace text (str), got {type(text).__name__}")
    if not text.strip():
        raise TraceError(f"{source}: the file is empty; expected a JSON trace export")
    try:
        return loads(text)
    except RecursionError as exc:
        raise TraceError(f"{source}: JSON nested too deeply to be a trace") from exc
    except json.JSONDecodeError as first_error:
        documents = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                documents.append(loads(line))
            except (ValueError, RecursionError):
                raise TraceError(
                    f"{source}: not a trace: not JSON: {first_error.msg} at line "
                    f"{first_error.lineno} "
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
    _refuse_several_traces(batch, source)
    return _normalize_batch(batch, metadata)


def _normalize_batch(batch: SpanBatch, metadata: Mapping[str, object] | None) -> Execution:
    """The ``Execution`` of one run's spans."""
    spans = _SpanSources(batch.entries)
    table = _table(batch.entries)
    names, kinds, statuses, span_ids, parent_ids, starts, _ = table
    if all(map(le, starts, islice(starts, 1, None))):
        order = list(range(len(starts)))  # already in start order (checked in C)
    else:
        # a stable sort on start time alone keeps file order for ties
        order = sorted(range(len(starts)), key=starts.__getitem__)
        table = [list(map(column.__getitem__, order)) for column in table]
        names, kinds, statuses, span_ids, parent_ids, starts, _ = table
    tops = top_positions(span_ids, parent_ids)
    intervals = partial(_interval, table)
    for position in repeated_tool_calls(names, kinds, span_ids, parent_ids, intervals, tops):
        kinds[position] = "custom"  # the same call seen twice: counted once
    for position, tool in agent_recorded_calls(
        names, kinds, span_ids, parent_ids, partial(_attributes, table)
    ):
        kinds[position], names[position] = "tool_call", tool
    root_at = root_position(span_ids, parent_ids, tops)
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
    if output_text is None and span_ids[root_at]:
        # a wrapper root (Monocle's "workflow"): the agent run right under it answers
        root_id = span_ids[root_at]
        for position in range(len(kinds) - 1, -1, -1):
            if parent_ids[position] == root_id and kinds[position] == "agent":
                output_text = _safe(answer_text, spans.decoded(order[position]))
                if output_text:
                    break
    if output_text is None:
        for position in range(len(kinds) - 1, -1, -1):
            if kinds[position] in _ANSWER_KINDS:
                output_text = _safe(answer_text, spans.decoded(order[position]))
                if output_text:
                    break
    merged: dict[str, Any] = dict(batch.resource)
    if metadata:
        merged.update(metadata)
    steps = StepColumns(
        tuple(names),
        tuple(kinds),
        tuple(statuses),
        partial(_steps, *table),
        partial(_step_at, table),
    )
    return Execution.detecting(
        _execution_id(spans, order, root_at, span_ids),
        steps,
        input_text,
        output_text,
        merged,
        partial(_framework, spans, order),
    )


def normalize_traces(
    raw: object,
    *,
    metadata: Mapping[str, object] | None = None,
    source: str = "<trace>",
) -> list[Execution]:
    """Normalize a parsed export into one ``Execution`` per run it holds (see ``runs.py``)."""
    batch = collect_spans(raw, source=source)
    groups = run_groups(batch)
    if len(groups) < 2:
        return [_normalize_batch(batch, metadata)]
    return [_normalize_batch(part, metadata) for part in split_runs(batch, groups)]


def _refuse_several_traces(batch: SpanBatch, source: str) -> None:
    """One execution is one run: a file holding several runs is refused, naming them."""
    groups = run_groups(batch)
    if len(groups) > 1:
        ids = [group[0] for group in groups]
        shown = ", ".join(ids[:3]) + (", ..." if len(ids) > 3 else "")
        raise TraceError(
            f"{source}: holds {len(ids)} separate runs (trace ids {shown}), not one "
            "execution; validate them with 'canon contract run', which checks each run, "
            "or pick one with --trace-id"
        )


def _table(entries: list[RawSpan | OtlpRun]) -> list[list[Any]]:
    """Columns of every span in file order: step name, kind, status, span id, parent id,
    start, and the origin a whole step is built from (an OTLP span, or a ready ``Step``)."""
    names: list[Any] = []
    kinds: list[Any] = []
    statuses: list[Any] = []
    span_ids: list[Any] = []
    parent_ids: list[Any] = []
    starts: list[Any] = []
    origins: list[Any] = []
    only_runs = all(isinstance(entry, OtlpRun) for entry in entries)
    for entry in entries:
        if isinstance(entry, OtlpRun):
            run = otlp_columns(entry)
            names += run.names
            kinds += run.kinds
            statuses += run.statuses
            span_ids += run.span_ids
            parent_ids += run.parent_ids
            # digit strings may stay strings only where no step's int start sits among them
            starts += run.starts if only_runs else nanos_column(run.starts)
            origins += entry.spans
        else:
            step = step_from_raw(entry)
            names.append(step.name)
            kinds.append(step.kind)
            statuses.append(step.status)
            span_ids.append(step.span_id)
            parent_ids.append(step.parent_id)
            starts.append(step.start_ns)
            origins.append(step)
    if only_runs:
        starts = start_column(starts)
    return [names, kinds, statuses, span_ids, parent_ids, starts, origins]


def _interval(table: list[list[Any]], position: int) -> tuple[int, int]:
    """Start and end time of the span at ``position`` of the (ordered) table."""
    origin = table[6][position]
    if isinstance(origin, Step):
        return origin.start_ns, origin.end_ns
    return as_nanos(table[5][position]), to_nanos(origin.get("endTimeUnixNano"))


def _attributes(table: list[list[Any]], position: int) -> Mapping[str, Any]:
    """The attributes of the span at ``position`` of the (ordered) table."""
    origin = table[6][position]
    if isinstance(origin, Step):
        return origin.attributes
    items = origin.get("attributes")
    return KVAttributes(items) if items.__class__ is list else decode_kv_list(items)


def _restep(origin: Step, name: str, kind: StepKind) -> Step:
    """A ready step whose kind changed after it was built (a repeat, a BeeAI agent's call)."""
    if kind == "tool_call":
        payload = LazyToolPayload(origin.attributes, ())
        return origin._replace(name=name, kind=kind, payload=payload)
    return origin._replace(kind=kind, payload=NO_PAYLOAD)


def _steps(*table: list[Any]) -> tuple[Step, ...]:
    """Every whole step, from the columns of ``_table`` (in execution order)."""
    names, kinds, statuses, span_ids, parent_ids, starts, origins = table
    return tuple(
        (origin if origin.kind == kind else _restep(origin, name, kind))
        if isinstance(origin, Step)
        else otlp_step(origin, name, kind, span_id, parent_id, start, status)
        for name, kind, status, span_id, parent_id, start, origin in zip(
            names, kinds, statuses, span_ids, parent_ids, starts, origins, strict=True
        )
    )


def _step_at(table: list[list[Any]], position: int) -> Step:
    """The whole step at one position of the columns of ``_table``."""
    names, kinds, statuses, span_ids, parent_ids, starts, origins = table
    origin, kind = origins[position], kinds[position]
    if isinstance(origin, Step):
        return origin if origin.kind == kind else _restep(origin, names[position], kind)
    return otlp_step(
        origin,
        names[position],
        kind,
        span_ids[position],
        parent_ids[position],
        starts[position],
        statuses[position],
    )


class _SpanSources:
    """The spans behind the steps, by file position; OTLP JSON ones decode on request."""

    __slots__ = ("_decoded", "_run_starts", "_runs")

    def __init__(self, entries: list[RawSpan | OtlpRun]) -> None:
        self._runs = [entry for entry in entries if isinstance(entry, OtlpRun)]
        self._run_starts = [run.first_position for run in self._runs]
        self._decoded = {entry.position: entry for entry in entries if isinstance(entry, RawSpan)}

    @property
    def runs(self) -> list[OtlpRun]:
        """The runs of plain OTLP spans, in file order."""
        return self._runs

    @property
    def decoded_spans(self) -> int:
        """How many spans were decoded while reading (not plain OTLP JSON)."""
        return len(self._decoded)

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

    def observe(self, position: int, detector: FrameworkDetector, layouts: _Layouts) -> None:
        """Show the span at file ``position`` to ``detector``, decoding only what it needs.

        A plain OTLP span whose scope, name and attribute keys cannot name a framework
        (only a convention) is passed by its keys alone; its layout of keys is looked at
        once per file.
        """
        run, offset = self._locate(position)
        if run is None:
            span = self._decoded[position]
            detector.observe(span.name, span.scope, span.attributes)
            return
        span_json = run.spans[offset]
        name = span_json.get("name")
        name = name if isinstance(name, str) else ""
        items = span_json.get("attributes")
        if items.__class__ is list and not detector.scope_hint(run.scope) and not name_marks(name):
            try:
                keys = tuple(map(_KEY, items))
                found = layouts.get(keys)
                if found is None:
                    present = set(keys)
                    found = layouts[keys] = (
                        not STRONG_KEYS.isdisjoint(present),
                        weak_mark(present),
                    )
            except (TypeError, KeyError):
                found = (True, "")  # a malformed list: the careful reading below
            if not found[0]:
                if found[1]:
                    detector.observe_weak(found[1])
                return
        attrs = (
            KVAttributes(items).subset(DETECT_KEYS)
            if items.__class__ is list
            else decode_kv_list(items)
        )
        detector.observe(name, run.scope, attrs)

    def trace_id(self, position: int) -> str:
        """The trace id of the span at file ``position``."""
        run, offset = self._locate(position)
        if run is None:
            return self.decoded(position).trace_id
        return normalize_id(run.spans[offset].get("traceId"), 32)


def _framework(spans: _SpanSources, order: list[int]) -> str:
    detector = FrameworkDetector()
    flat = _conventions_only(spans, detector)
    if flat is not None:
        # no span can name a framework: the convention of the earliest span that has one
        for original in order:
            mark = weak_mark(set(map(_KEY, flat[original]["attributes"])))
            if mark:
                return mark
        return detector.result()
    layouts: _Layouts = {}
    for original in order:
        spans.observe(original, detector, layouts)
        if detector.done:
            break
    return detector.result()


def _conventions_only(
    spans: _SpanSources, detector: FrameworkDetector
) -> list[dict[str, Any]] | None:
    """Every span in file order, when no span can name a framework; else None.

    That is a file of plain OTLP runs whose scopes, span names and attribute keys hold no
    framework mark (generic GenAI traces), checked with C-level passes over whole runs.
    """
    if spans.decoded_spans:
        return None
    flat: list[dict[str, Any]] = []
    for run in spans.runs:
        if detector.scope_hint(run.scope):
            return None
        names: list[Any] = list(map(dict.get, run.spans, repeat("name")))
        try:
            joined = "\x00" + "\x00".join(names) + "\x00"
            keys = set(map(_KEY, chain.from_iterable(map(_ATTRIBUTES, run.spans))))
        except (TypeError, KeyError):
            return None  # a name that is not text, a span without a list: the careful road
        if "[any_agent]\x00" in joined or "\x00claude_code." in joined:
            return None
        if not NAME_MARKS.isdisjoint(names) or not STRONG_KEYS.isdisjoint(keys):
            return None
        flat += run.spans
    return flat


def _safe(read: Callable[[RawSpan], str | None], span: RawSpan) -> str | None:
    try:
        return read(span)
    except RecursionError:
        return None


def _execution_id(spans: _SpanSources, order: list[int], root_at: int, span_ids: list[str]) -> str:
    trace_id = spans.trace_id(order[root_at])
    if trace_id:
        return trace_id
    for original in order:
        trace_id = spans.trace_id(original)
        if trace_id:
            return trace_id
    return span_ids[root_at] or "unknown"
