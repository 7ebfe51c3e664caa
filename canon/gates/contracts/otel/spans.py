"""Container formats: turn any supported trace export into one flat list of raw spans.

Accepted: OTLP JSON (``resourceSpans``/``scopeSpans``, snake_case, legacy
``instrumentationLibrarySpans``), Tempo ``batches``, Jaeger query-API JSON (``data[].spans``
or one trace object), a plain span list or ``{"spans": [...]}`` in OTLP or OTel-SDK shape
(``context``/``parent`` objects, integer or hex ids, ISO times), and a list of any of these
(what OTLP JSON lines parse to).
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from canon.gates.contracts.otel.backends import (
    datadog_span,
    is_datadog_span,
    is_langfuse,
    is_zipkin_span,
    langfuse_spans,
    widen_datadog_trace_ids,
    zipkin_span,
)
from canon.gates.contracts.otel.errors import TraceError
from canon.gates.contracts.otel.jaeger import jaeger_span
from canon.gates.contracts.otel.logs import (
    LogEvent,
    is_log_record,
    join_events,
    log_event,
    otlp_log_records,
)
from canon.gates.contracts.otel.rawspan import OtlpRun, RawSpan
from canon.gates.contracts.otel.shapes import (
    json_object,
    process_attributes,
    sdk_fields,
)
from canon.gates.contracts.otel.values import (
    decode_kv_list,
    decode_status,
    normalize_id,
    otlp_events,
    to_nanos,
)


@dataclass(frozen=True, slots=True)
class SpanBatch:
    """Every span of one trace file, plus what the container says about the run as a whole.

    ``entries`` holds spans already decoded (``RawSpan``) and runs of OTLP JSON spans not yet
    decoded (``OtlpRun``), in file order; ``spans`` decodes everything.
    """

    entries: list[RawSpan | OtlpRun]
    resource: dict[str, Any]
    final_output: object = None  # any-agent writes the run's answer next to its spans
    log_records: int = 0  # OpenTelemetry log records read (joined to their spans or not)
    unjoined_logs: int = 0  # of those, the ones naming no span in the file
    metrics_skipped: int = 0  # OTLP metrics documents, which hold no spans

    @property
    def spans(self) -> list[RawSpan]:
        """Every span, decoded, in file order."""
        out: list[RawSpan] = []
        for entry in self.entries:
            if isinstance(entry, OtlpRun):
                first = entry.first_position
                for offset, span in enumerate(entry.spans):
                    out.append(otlp_raw_span(span, entry.scope, first + offset))
            else:
                out.append(entry)
        return out


_new_span = tuple.__new__
_SPAN_ID = itemgetter("spanId")
_START = itemgetter("startTimeUnixNano")
_NAME = itemgetter("name")
_OTLP_KEYS = ("resourceSpans", "resource_spans", "batches")
_SCOPE_KEYS = ("scopeSpans", "scope_spans", "instrumentationLibrarySpans")
_SPAN_MARKERS = (
    "spanId",
    "span_id",
    "spanID",
    "context",
    "spanContext",
    "name",
    "span_name",
    "operationName",
)
_JAEGER_MARKERS = ("spanID", "operationName")
# API responses that wrap an export, and AgentCore's evaluation request or Lambda event
_ENVELOPES = ("result", "trace", "data", "evaluationInput")
# Keys of a session or row export whose value holds spans and log records.
_SESSION_KEYS = ("sessionSpans", "raw_otel_json")
_METRICS_KEYS = ("resourceMetrics", "resource_metrics")
_EXPECTED = (
    "OTLP JSON (resourceSpans), a Tempo export (batches), a Jaeger export (data[].spans), "
    "OTLP JSON lines, a Langfuse, Datadog, Zipkin or AgentCore export, or a span list"
)


class _Collector:
    def __init__(self, source: str) -> None:
        self.source = source
        self.entries: list[RawSpan | OtlpRun] = []
        self.count = 0
        self.resource: dict[str, Any] = {}
        self.final_output: object = None
        self.skipped = 0  # objects in span positions that are no span (log records, ...)
        self.log_records = 0
        self.logs: list[LogEvent] = []
        self.metrics = 0
        self.datadog: set[int] = set()  # file positions of Datadog spans

    def fail(self, found: str) -> TraceError:
        return TraceError(
            f"{self.source}: not a trace: expected {_EXPECTED}; got {found}; "
            "export the agent's spans with an OTLP JSON or Jaeger JSON exporter"
        )

    def container(self, raw: object, where: str) -> None:
        if isinstance(raw, list):
            for position, item in enumerate(raw):
                if isinstance(item, str):
                    item = json_object(item)  # a span written as JSON text (any-agent)
                if isinstance(item, list):
                    self.container(item, f"{where}[{position}]")  # Datadog: a list of traces
                    continue
                if isinstance(item, dict) and self.backend_span(item):
                    continue
                if isinstance(item, dict) and any(k in item for k in _JAEGER_MARKERS):
                    self.jaeger_span(item)  # a bare array of Jaeger spans
                elif isinstance(item, dict) and not _looks_like_span(item):
                    self.container(item, f"{where}[{position}]")
                else:
                    self.generic_span(item, "", None)
            return
        if not isinstance(raw, dict):
            raise self.fail(f"{_type_name(raw)} at {where}")
        for key in _OTLP_KEYS:
            if key in raw:
                self.otlp(raw[key], f"{where}.{key}")
                return
        if self.other_document(raw, where):
            return
        data = raw.get("data")
        if isinstance(data, list) and all(isinstance(t, dict) and "spans" in t for t in data):
            for trace in data:
                self.jaeger_trace(trace)
            return
        if "spans" in raw:
            spans = raw["spans"]
            if not isinstance(spans, list):
                raise self.fail(f"'spans' holding {_type_name(spans)} at {where}")
            if "final_output" in raw:
                self.final_output = raw["final_output"]
            if "processes" in raw or any(isinstance(s, dict) and "spanID" in s for s in spans):
                self.jaeger_trace(raw)
            else:
                self.generic_list(spans, "", None)
            return
        if _looks_like_span(raw):
            self.generic_span(raw, "", None)
            return
        for key in _ENVELOPES:
            inner = raw.get(key)
            if isinstance(inner, dict):
                # an API response that wraps the export ({"result": {"resourceSpans": ...}})
                self.container(inner, f"{where}.{key}")
                return
        keys = sorted(str(k) for k in raw)[:8]
        lists = sorted(str(k) for k, v in raw.items() if isinstance(v, list) and v)
        held = f", whose lists under {lists} hold no spans Canon reads" if lists else ""
        raise self.fail(f"a JSON object with keys {keys} at {where}{held}")

    def otlp(self, resource_spans: object, where: str) -> None:
        if not isinstance(resource_spans, list):
            raise self.fail(f"{_type_name(resource_spans)} at {where}, not a list")
        for block in resource_spans:
            if not isinstance(block, dict):
                continue
            resource = block.get("resource")
            if isinstance(resource, dict):
                self.resource.update(decode_kv_list(resource.get("attributes")))
            for key in _SCOPE_KEYS:
                scopes = block.get(key)
                if not isinstance(scopes, list):
                    continue
                for scope_block in scopes:
                    if not isinstance(scope_block, dict):
                        continue
                    scope = scope_block.get("scope") or scope_block.get("instrumentationLibrary")
                    scope_name = scope.get("name") if isinstance(scope, dict) else None
                    spans = scope_block.get("spans")
                    if not isinstance(spans, list):
                        continue
                    columns = _plain_otlp_columns(spans) if spans else None
                    if columns is not None:
                        run = OtlpRun(_text(scope_name), spans, self.count, *columns)
                        self.entries.append(run)
                        self.count += len(spans)
                    else:
                        self.generic_list(spans, _text(scope_name), None)

    def generic_list(self, spans: list[Any], scope: str, resource: dict[str, Any] | None) -> None:
        for span in spans:
            self.generic_span(span, scope, resource)

    def generic_span(self, span: object, scope: str, resource: dict[str, Any] | None) -> None:
        """Read one span in OTLP JSON or OTel-SDK (``ReadableSpan.to_json``) shape."""
        if not isinstance(span, dict):
            return  # a stray scalar in a span list is noise, not a span
        name = span.get("name")
        if name is None:
            name = span.get("span_name")  # Okahu exports
        if not isinstance(name, str) or not name.strip():
            self.reject(span)
            return
        own_resource = span.get("resource")
        if isinstance(own_resource, dict):
            self.resource.update(decode_kv_list(own_resource.get("attributes")))
        if not scope:
            own_scope = (
                span.get("instrumentation_scope")
                or span.get("instrumentationScope")
                or span.get("instrumentationLibrary")
                or span.get("scope")
            )
            if isinstance(own_scope, dict):
                scope = _text(own_scope.get("name"))
        if "spanId" in span and "startTimeUnixNano" in span:
            self.add(otlp_raw_span(span, scope, self.count))
            return
        trace_id, span_id, parent, start, end = sdk_fields(span)
        if not normalize_id(span_id) and not to_nanos(start):
            self.reject(span)  # a span needs an id or a start time besides its name
            return
        events = span.get("events")
        self.add(
            _new_span(
                RawSpan,
                (
                    self.count,
                    name,
                    normalize_id(trace_id, 32),
                    normalize_id(span_id),
                    normalize_id(parent),
                    to_nanos(start),
                    to_nanos(end),
                    decode_status(span.get("status")),
                    decode_kv_list(span.get("attributes")),
                    otlp_events(events) if events else (),
                    scope,
                ),
            )
        )

    def other_document(self, raw: dict[str, Any], where: str) -> bool:
        """Read the non-span documents and session envelopes; False when ``raw`` is none."""
        if is_log_record(raw):
            self.reject(raw)
            return True
        records = otlp_log_records(raw)
        if records is not None:
            for record in records:
                self.log(record)  # in resourceLogs, a record is a log whatever it holds
            return True
        if any(key in raw for key in _METRICS_KEYS):
            self.metrics += 1  # a Collector file mixes metrics in: they hold no spans
            return True
        if is_langfuse(raw):
            spans, resource, output = langfuse_spans(raw)
            self.resource.update(resource)
            for span in spans:
                self.add(span._replace(position=self.count))
            if output is not None and self.final_output is None:
                self.final_output = output
            return True
        for key in _SESSION_KEYS:
            inner = raw.get(key)
            if isinstance(inner, str):
                inner = json_object(inner)
            if isinstance(inner, (list, dict)):
                self.container(inner, f"{where}.{key}")
                return True
        return self.backend_span(raw)

    def backend_span(self, item: dict[str, Any]) -> bool:
        """Read a Datadog or Zipkin span; False when ``item`` is neither."""
        if is_datadog_span(item):
            span, resource = datadog_span(item)
            self.datadog.add(self.count)
        elif is_zipkin_span(item):
            span, resource = zipkin_span(item)
        else:
            return False
        self.resource.update(resource)
        self.add(span._replace(position=self.count))
        return True

    def reject(self, item: dict[str, Any]) -> None:
        self.skipped += 1
        if is_log_record(item):
            self.log(item)

    def log(self, record: dict[str, Any]) -> None:
        """Keep a log record, to join to the span it names."""
        self.log_records += 1
        self.logs.append(log_event(record))
        own_resource = record.get("resource")
        if isinstance(own_resource, dict):
            self.resource.update(decode_kv_list(own_resource.get("attributes")))

    def add(self, span: RawSpan) -> None:
        self.entries.append(span)
        self.count += 1

    def jaeger_trace(self, trace: dict[str, Any]) -> None:
        processes = trace.get("processes")
        procs = processes if isinstance(processes, dict) else {}
        for process in procs.values():
            if isinstance(process, dict):
                self.resource.update(process_attributes(process))
        spans = trace.get("spans")
        if not isinstance(spans, list):
            return
        for span in spans:
            if isinstance(span, dict):
                self.jaeger_span(span)

    def jaeger_span(self, span: dict[str, Any]) -> None:
        raw, resource = jaeger_span(span)
        self.resource.update(resource)
        self.add(raw._replace(position=self.count))


def collect_spans(raw: object, *, source: str) -> SpanBatch:
    """Flatten a parsed trace export into raw spans; raise ``TraceError`` when there are none."""
    collector = _Collector(source)
    collector.container(raw, "top level")
    if not collector.count and collector.log_records:
        raise TraceError(
            f"{source}: not a trace: it holds {collector.log_records} OpenTelemetry log "
            "record(s) and no spans; export the agent's spans (OTLP JSON or Jaeger JSON), "
            "not its logs"
        )
    if not collector.count and collector.skipped:
        raise TraceError(
            f"{source}: not a trace: {collector.skipped} object(s) in span position have "
            "no span name, or neither a span id nor a start time; export the agent's spans "
            "with an OTLP JSON or Jaeger JSON exporter"
        )
    if not collector.count:
        raise TraceError(f"{source}: the trace holds no spans: {_no_spans(raw, collector)}")
    entries = collector.entries
    if collector.datadog:
        entries = widen_datadog_trace_ids(entries, collector.datadog)
    unjoined = 0
    if collector.logs:
        spans, unjoined = join_events(SpanBatch(entries, {}).spans, collector.logs)
        entries = list(spans)
    return SpanBatch(
        entries,
        collector.resource,
        collector.final_output,
        collector.log_records,
        unjoined,
        collector.metrics,
    )


def _no_spans(raw: object, collector: _Collector) -> str:
    """Why a file with no spans has none: the object read, and keys holding what was not."""
    if collector.metrics:
        return (
            f"it holds {collector.metrics} OTLP metrics document(s) (resourceMetrics) and no "
            "spans; export the agent's traces, not its metrics"
        )
    found = f"a {_type_name(raw)}"
    if isinstance(raw, dict):
        lists = sorted(str(k) for k, v in raw.items() if isinstance(v, list) and v)
        if lists:
            return (
                f"expected spans in {_EXPECTED}; the JSON object at top level holds lists "
                f"under {lists}, none of them spans Canon reads"
            )
        found = f"a JSON object with keys {sorted(str(k) for k in raw)[:8]}"
    return (
        f"expected at least one span in {_EXPECTED}; got {found} with none; check that "
        "the exporter flushed before the file was written"
    )


def otlp_raw_span(span: Any, scope: str, position: int) -> RawSpan:
    """Decode one OTLP JSON span (it has ``spanId`` and ``startTimeUnixNano``)."""
    if span.__class__ is not dict:
        span = span.as_dict()  # a typed span: its JSON
    name = span.get("name")
    events = span.get("events")
    # tuple.__new__ skips the NamedTuple constructor's Python-level wrapper
    return _new_span(
        RawSpan,
        (
            position,
            name if isinstance(name, str) else "",
            normalize_id(span.get("traceId"), 32),
            normalize_id(span["spanId"]),
            normalize_id(span.get("parentSpanId")),
            to_nanos(span["startTimeUnixNano"]),
            to_nanos(span.get("endTimeUnixNano")),
            decode_status(span.get("status")),
            decode_kv_list(span.get("attributes")),
            otlp_events(events) if events else (),
            scope,
        ),
    )


def _plain_otlp_columns(spans: list[Any]) -> tuple[list[Any], list[Any], list[Any]] | None:
    """Span ids, start times and names (kept: read first) of OTLP JSON spans; None if any is not."""
    try:
        return (
            list(map(_SPAN_ID, spans)),
            list(map(_START, spans)),
            list(map(_NAME, spans)),
        )
    except (TypeError, KeyError):  # an item that is not a JSON object, or lacks a field
        return None


def _looks_like_span(item: dict[str, Any]) -> bool:
    return any(key in item for key in _SPAN_MARKERS) and not any(k in item for k in _OTLP_KEYS)


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _type_name(value: object) -> str:
    names = {dict: "JSON object", list: "JSON array", str: "string", bool: "boolean"}
    return "null" if value is None else names.get(type(value), type(value).__name__)
