"""The collector: any supported trace export in, one flat list of raw spans out.

What each JSON object is, and how it is read, is the format registry's
(``formats/__init__.py``: OTLP JSON, Jaeger, Langfuse, Datadog, Zipkin, AgentCore, span
lists ...). Here are the walk over the file (a list of any of these, which is what OTLP
JSON lines parse to; arrays of arrays; spans written as JSON text) and the sink the readers
write into: spans in file order, resource attributes, log records joined to their spans.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from canon.gates.contracts.otel.errors import TraceError
from canon.gates.contracts.otel.formats import REGISTRY, Ambiguous, Nested, Registry, Where
from canon.gates.contracts.otel.formats.base import TraceFormat, type_name
from canon.gates.contracts.otel.formats.otel_span import read_span
from canon.gates.contracts.otel.formats.otlp import otlp_raw_span
from canon.gates.contracts.otel.logs import LogEvent, is_log_record, join_events, log_event
from canon.gates.contracts.otel.rawspan import OtlpRun, RawSpan
from canon.gates.contracts.otel.shapes import json_object
from canon.gates.contracts.otel.values import decode_kv_list


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
    formats: tuple[str, ...] = ()  # the titles of the formats that read it, in file order
    runs: int = 1  # the runs of the file this batch is one of (``runs.split_runs``)

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


_SPAN_ID = itemgetter("spanId")
_START = itemgetter("startTimeUnixNano")
_NAME = itemgetter("name")


class _Collector:
    """The ``SpanSink`` of one file: what its readers found, in file order."""

    def __init__(self, source: str, registry: Registry) -> None:
        self.source = source
        self.registry = registry
        self.entries: list[RawSpan | OtlpRun] = []
        self.count = 0
        self.resource: dict[str, Any] = {}
        self.final_output: object = None
        self.skipped = 0  # objects in span positions that are no span (log records, ...)
        self.log_records = 0
        self.logs: list[LogEvent] = []
        self.metrics = 0
        # formats with a ``finish``, by name, and the (first, end) positions they read
        self.finishing: dict[str, tuple[TraceFormat, list[tuple[int, int]]]] = {}
        self.formats: dict[str, None] = {}  # titles of the formats read, in file order
        self._item = registry.at(Where.ITEM).recognize
        self._document = registry.at(Where.DOCUMENT).recognize

    def fail(self, found: str) -> TraceError:
        return TraceError(
            f"{self.source}: not a trace: expected {self.registry.expected}; got {found}; "
            "export the agent's spans with an OTLP JSON or Jaeger JSON exporter"
        )

    def read(self, raw: object, where: str) -> None:
        """Read a JSON value: an array of documents or spans, or one document."""
        if not isinstance(raw, list):
            self.document(raw, where)
            return
        recognize = self._item
        for position, item in enumerate(raw):
            if isinstance(item, str):
                item = json_object(item)  # a span written as JSON text (any-agent)
            if isinstance(item, list):
                self.read(item, f"{where}[{position}]")  # Datadog: a list of traces
            elif isinstance(item, dict):
                try:
                    found = recognize(item)
                except (Ambiguous, Nested) as clash:
                    raise TraceError(clash.message(self.source, f"{where}[{position}]")) from None
                if found is None:
                    self.document(item, f"{where}[{position}]")  # a JSON line, a trace
                else:
                    self.read_as(found, item, where)
            # anything else in an array (a number, text that is no JSON object) is no span

    def document(self, raw: object, where: str) -> None:
        if not isinstance(raw, dict):
            raise self.fail(f"{type_name(raw)} at {where}")
        try:
            found = self._document(raw)
        except (Ambiguous, Nested) as clash:
            raise TraceError(clash.message(self.source, where)) from None
        if found is not None:
            self.read_as(found, raw, where)
            return
        keys = sorted(str(k) for k in raw)[:8]
        lists = sorted(str(k) for k, v in raw.items() if isinstance(v, list) and v)
        held = f", whose lists under {lists} hold no spans Canon reads" if lists else ""
        raise self.fail(f"a JSON object with keys {keys} at {where}{held}")

    def read_as(self, found: TraceFormat, raw: dict[str, Any], where: str) -> None:
        self.formats[found.title] = None
        if found.finish is None:
            found.read(raw, self, where)
            return
        first = self.count
        found.read(raw, self, where)
        if self.count > first:
            self.finishing.setdefault(found.name, (found, []))[1].append((first, self.count))

    def add_otlp_spans(self, spans: list[Any], scope: str) -> None:
        columns = _plain_otlp_columns(spans) if spans else None
        if columns is not None:
            self.entries.append(OtlpRun(scope, spans, self.count, *columns))
            self.count += len(spans)
        else:
            for span in spans:
                read_span(span, scope, self)

    def add_resource(self, attributes: dict[str, Any]) -> None:
        self.resource.update(attributes)

    def amend(self, span_id: str, change: Callable[[RawSpan], RawSpan]) -> bool:
        entries = self.entries
        for at in range(len(entries) - 1, -1, -1):  # a patch follows its post closely
            entry = entries[at]
            if entry.__class__ is RawSpan and entry.span_id == span_id:
                entries[at] = change(entry)
                return True
        return False

    def skip_metrics(self) -> None:
        self.metrics += 1  # a Collector file mixes metrics in: they hold no spans

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
        self.entries.append(span)  # built at position ``count``, as readers build them
        self.count += 1


def collect_spans(raw: object, *, source: str, registry: Registry = REGISTRY) -> SpanBatch:
    """Flatten a parsed trace export into raw spans; raise ``TraceError`` when there are none.

    ``registry`` is the table of formats it reads (``formats.REGISTRY``).
    """
    collector = _Collector(source, registry)
    collector.read(raw, "top level")
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
    for found, ranges in collector.finishing.values():
        assert found.finish is not None
        entries = found.finish(entries, {at for first, end in ranges for at in range(first, end)})
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
        tuple(collector.formats),
    )


def _no_spans(raw: object, collector: _Collector) -> str:
    """Why a file with no spans has none: the object read, and keys holding what was not."""
    if collector.metrics:
        return (
            f"it holds {collector.metrics} OTLP metrics document(s) (resourceMetrics) and no "
            "spans; export the agent's traces, not its metrics"
        )
    found = f"a {type_name(raw)}"
    expected = collector.registry.expected
    if isinstance(raw, dict):
        lists = sorted(str(k) for k, v in raw.items() if isinstance(v, list) and v)
        if lists:
            return (
                f"expected spans in {expected}; the JSON object at top level holds lists "
                f"under {lists}, none of them spans Canon reads"
            )
        found = f"a JSON object with keys {sorted(str(k) for k in raw)[:8]}"
    return (
        f"expected at least one span in {expected}; got {found} with none; check that "
        "the exporter flushed before the file was written"
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
