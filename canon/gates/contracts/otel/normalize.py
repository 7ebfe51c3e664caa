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
decoded before that (``sources.py``). From text, with msgspec installed, plain OTLP JSON
is read into structs instead of dicts (``typed.py``), with the same results.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import partial
from itertools import islice
from operator import le
from typing import Any

from canon.gates.contracts.execution import (
    NO_PAYLOAD,
    Execution,
    Reading,
    Step,
    StepColumns,
    StepKind,
)
from canon.gates.contracts.otel.attributes import KVAttributes
from canon.gates.contracts.otel.beeai import agent_recorded_calls
from canon.gates.contracts.otel.errors import TraceError
from canon.gates.contracts.otel.eventtable import event_table_rows, is_event_table
from canon.gates.contracts.otel.formats import REGISTRY, Registry
from canon.gates.contracts.otel.jsontext import loads
from canon.gates.contracts.otel.otlptext import otlp_documents
from canon.gates.contracts.otel.payloads import LazyToolPayload
from canon.gates.contracts.otel.rawspan import OtlpRun, RawSpan
from canon.gates.contracts.otel.runs import run_groups, split_runs
from canon.gates.contracts.otel.sources import SpanSources, framework
from canon.gates.contracts.otel.spans import SpanBatch, collect_spans
from canon.gates.contracts.otel.steps import (
    as_nanos,
    nanos_column,
    otlp_columns,
    otlp_step,
    start_column,
    step_from_raw,
)
from canon.gates.contracts.otel.text import answer_text, final_output_text, request_text
from canon.gates.contracts.otel.tree import (
    nested_model_calls,
    repeated_tool_calls,
    root_position,
    top_positions,
)
from canon.gates.contracts.otel.values import decode_kv_list, to_nanos

_ANSWER_KINDS = frozenset({"model_call", "agent"})


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
        if is_event_table(text):
            return event_table_rows(text, source)
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
    except ValueError as exc:  # an integer past CPython's digit limit for int("...")
        raise TraceError(f"{source}: the trace is not valid JSON: {exc}") from None


def normalize_trace_text(
    text: str,
    *,
    metadata: Mapping[str, object] | None = None,
    source: str = "<trace>",
) -> Execution:
    """``normalize_trace(parse_trace_text(text))``: the same execution or the same error,
    read without building the JSON's dicts when msgspec is in use and the text is plain
    OTLP JSON (``typed.py``)."""
    batch = _text_batch(text, source)
    _refuse_several_traces(batch, source)
    return _normalize_batch(batch, metadata)


def normalize_traces_text(
    text: str,
    *,
    metadata: Mapping[str, object] | None = None,
    source: str = "<trace>",
) -> list[Execution]:
    """``normalize_traces(parse_trace_text(text))``, read as ``normalize_trace_text`` reads."""
    return _batch_runs(_text_batch(text, source), metadata)


def _text_batch(text: str, source: str) -> SpanBatch:
    documents = otlp_documents(text) if isinstance(text, str) else None
    if documents is not None:
        from canon.gates.contracts.otel.typed import document_batch

        batch = document_batch(documents)  # type: ignore[arg-type]  # of OtlpDocument
        if batch is not None:
            return batch
    return collect_spans(parse_trace_text(text, source=source), source=source)


def normalize_trace(
    raw: object,
    *,
    metadata: Mapping[str, object] | None = None,
    source: str = "<trace>",
    registry: Registry = REGISTRY,
) -> Execution:
    """Normalize a parsed trace export into an ``Execution``; ``TraceError`` if it is none.

    ``registry`` is the table of trace formats read (``formats.REGISTRY``).
    """
    batch = collect_spans(raw, source=source, registry=registry)
    _refuse_several_traces(batch, source)
    return _normalize_batch(batch, metadata)


def _normalize_batch(batch: SpanBatch, metadata: Mapping[str, object] | None) -> Execution:
    """The ``Execution`` of one run's spans."""
    spans = SpanSources(batch.entries)
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
    for position in nested_model_calls(kinds, span_ids, parent_ids):
        kinds[position] = "custom"  # one model call seen by two instrumentations: once
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
        partial(framework, spans, order),
        Reading(
            batch.formats,
            batch.runs,
            len(names),
            tuple(name for name, kind in zip(names, kinds, strict=True) if kind == "tool_call"),
        ),
    )


def normalize_traces(
    raw: object,
    *,
    metadata: Mapping[str, object] | None = None,
    source: str = "<trace>",
    registry: Registry = REGISTRY,
) -> list[Execution]:
    """Normalize a parsed export into one ``Execution`` per run it holds (see ``runs.py``),
    reading the formats of ``registry``."""
    return _batch_runs(collect_spans(raw, source=source, registry=registry), metadata)


def _batch_runs(batch: SpanBatch, metadata: Mapping[str, object] | None) -> list[Execution]:
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


def _typed_run_columns(run: OtlpRun) -> Any:
    """``typed.run_columns`` (imported here: it imports msgspec, needed once a typed run is)."""
    from canon.gates.contracts.otel.typed import run_columns

    return run_columns(run)


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
            run = _typed_run_columns(entry) if entry.typed else otlp_columns(entry)
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
    if origin.__class__ is not dict:
        origin = origin.as_dict()  # a typed span: its JSON
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


def _safe(read: Callable[[RawSpan], str | None], span: RawSpan) -> str | None:
    try:
        return read(span)
    except RecursionError:
        return None


def _execution_id(spans: SpanSources, order: list[int], root_at: int, span_ids: list[str]) -> str:
    trace_id = spans.trace_id(order[root_at])
    if trace_id:
        return trace_id
    for original in order:
        trace_id = spans.trace_id(original)
        if trace_id:
            return trace_id
    return span_ids[root_at] or "unknown"
