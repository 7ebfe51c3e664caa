"""What every trace format shares: the ``TraceFormat`` entry a reader module declares for the
registry (``formats/__init__.py``) and the ``SpanSink`` a reader writes its spans into.

A reader recognizes one shape of JSON object (``claims``: a pure test of its keys, no
decoding) and reads it (``read``: decoded spans, resource attributes, log records, or a
nested object handed back to the collector). It never decides against another format:
the registry asks every format, and two formats claiming one object is an error.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from canon.gates.contracts.otel.errors import TraceError
from canon.gates.contracts.otel.rawspan import OtlpRun, RawSpan

Entry = RawSpan | OtlpRun


class Where(enum.Enum):
    """Where in a file an object is recognized."""

    DOCUMENT = "document"  # the whole file, one JSON line, or what an envelope wraps
    ITEM = "item"  # one element of a JSON array (a span, a trace, a JSON line)


class SpanSink(Protocol):
    """What a reader writes into: the collector of one file's spans."""

    final_output: object
    count: int  # spans kept so far: the position of the next one

    def add(self, span: RawSpan) -> None:
        """Keep one decoded span; it was built at position ``count``."""
        ...

    def add_resource(self, attributes: dict[str, Any]) -> None:
        """Lay resource attributes over the file's (later ones win)."""
        ...

    def amend(self, span_id: str, change: Callable[[RawSpan], RawSpan]) -> bool:
        """Replace the latest kept span of ``span_id`` by ``change(span)``; False if none."""
        ...

    def add_otlp_spans(self, spans: list[Any], scope: str) -> None:
        """Keep a scope's OTLP JSON spans (left parsed when they are plain OTLP)."""
        ...

    def log(self, record: dict[str, Any]) -> None:
        """Keep a log record, to join to the span it names."""
        ...

    def reject(self, item: dict[str, Any]) -> None:
        """Count an object in span position that is no span (kept if a log record)."""
        ...

    def skip_metrics(self) -> None:
        """Count an OTLP metrics document: it holds no spans."""
        ...

    def read(self, raw: object, where: str) -> None:
        """Read a nested object (an envelope's inside, a session's spans) as a file."""
        ...

    def fail(self, found: str) -> TraceError:
        """The error for an object that is no trace Canon reads, ``found`` naming it."""
        ...


@dataclass(frozen=True, slots=True)
class TraceFormat:
    """One trace format, as the registry lists it.

    ``claims`` tests an object's keys; it is asked only about objects that hold one of
    ``keys`` (the registry indexes formats by them, so an object is tested by the few
    formats it could be), and it must never hold for an object without one. ``read`` reads
    a claimed object into the sink, given where it is for messages (the object's path; for
    an array element, the array's); it builds each span at position ``sink.count``. Formats of
    ``rank`` 0 never overlap (two that claim one object are refused by name); a higher
    rank is asked only when no lower one claims (the generic span shape, then an
    envelope). ``finish`` rewrites the file's entries once read, given the positions of
    the spans this format read (Datadog's 128-bit trace ids). ``title``, ``expected``,
    ``shape`` and ``learned_from`` are its words in errors and in docs/contracts.md.
    """

    name: str
    title: str
    expected: str
    shape: str
    learned_from: str
    claims: Callable[[dict[str, Any]], bool]
    keys: tuple[str, ...]
    read: Callable[[dict[str, Any], SpanSink, str], None]
    at: tuple[Where, ...] = (Where.DOCUMENT,)
    rank: int = 0
    finish: Callable[[list[Entry], set[int]], list[Entry]] | None = None
    span_parts: frozenset[str] | None = None  # set when it reads an object as one span


# Keys that mark an object as part of a trace: a span, a run, an observation, or a container.
_TRACE_MARKS = frozenset(
    {
        "spanId",
        "span_id",
        "spanID",
        "spanContext",
        "name",
        "span_name",
        "operationName",
        "run_type",
        "child_runs",
        "parent_run_id",
        "parentObservationId",
        "parentUuid",
        "span_data",
        "spans",
        "observations",
        "resourceSpans",
        "resource_spans",
        "batches",
        "traces",
        "runs",
        "span_attributes",  # an AgentOps span row
        "record_attributes",  # a TruLens event record
    }
)
# Keys that make an object (not in a list) a container of spans or runs.
_CONTAINER_KEYS = frozenset(
    {"spans", "observations", "child_runs", "resourceSpans", "resource_spans", "batches"}
    | {"traces", "runs", "sessionSpans", "post", "patch"}  # LangSmith uploads
    | {"baseSpans", "agentSpans", "llmSpans", "retrieverSpans", "toolSpans"}  # deepeval
)

_ENVELOPE_KEYS = ("data", "result", "trace", "evaluationInput")  # an API response's wrappers


def held_trace(raw: dict[str, Any], parts: frozenset[str]) -> tuple[str, int] | None:
    """Trace content an object holds beside what a one-span reader reads as the span's own
    (``parts``): the first other key holding span-like objects (a list of spans, runs,
    observations or traces, or an object holding such a list), and how many; None if none.

    An object that holds them is a container, never a span: read as one span, its steps
    would be lost without an error.
    """
    for key, value in raw.items():
        if key in parts:
            continue
        if type(value) is list:
            held = sum(1 for item in value if _listed_part(item))
            if held:
                return str(key), held
        elif type(value) is dict and _trace_part(value, False):
            return str(key), 1
    return None


def _listed_part(item: object) -> bool:
    """Whether an array element is a span (or run ...), a container, an array of them (a
    Datadog trace), or one written as JSON text."""
    if type(item) is dict:
        return _trace_part(item, True)
    if type(item) is list:
        return any(map(_listed_part, item))
    return type(item) is str and item.lstrip().startswith("{")


def _trace_part(item: dict[str, Any], listed: bool) -> bool:
    """Whether an object holds spans (or runs ...), or is one when ``listed`` in an array."""
    if listed and not _TRACE_MARKS.isdisjoint(item):
        return True
    return not _CONTAINER_KEYS.isdisjoint(item) or any(
        type(item.get(inner)) in (list, dict) for inner in _ENVELOPE_KEYS
    )


def text(value: object) -> str:
    """``value`` when it is text, else empty."""
    return value if isinstance(value, str) else ""


def type_name(value: object) -> str:
    """How an error names a JSON value's type."""
    names = {dict: "JSON object", list: "JSON array", str: "string", bool: "boolean"}
    return "null" if value is None else names.get(type(value), type(value).__name__)
