"""Datadog APM spans: ``meta``/``metrics`` maps, integer ids (or, from dd-trace-js, decimal
strings) and ``start``/``duration`` in nanoseconds; ``resource`` is kept as ``resource.name``
(Datadog's own OTel mapping). A file is an array of traces (or of payloads of traces), each
an array of spans; the collector walks the arrays and this reader takes each span."""

from __future__ import annotations

from typing import Any

from canon.gates.contracts.execution import StepStatus
from canon.gates.contracts.otel.formats.base import Entry, SpanSink, TraceFormat, Where, text
from canon.gates.contracts.otel.rawspan import RawSpan
from canon.gates.contracts.otel.values import normalize_id, to_nanos

# Datadog names its LLM integrations' spans by product ("CrewAI Tool", "Pydantic Agent").
_PRODUCTS = {"crewai": "crewai", "pydantic": "pydantic_ai"}
_HEX = frozenset("0123456789abcdef")
_NO_HIGH_BITS = "0" * 16  # a 64-bit trace id written as 32 hex digits

_new_span = tuple.__new__  # skips the NamedTuple constructor's Python-level wrapper


def _claims(item: dict[str, Any]) -> bool:
    """Whether a JSON object is a span in Datadog's APM trace format."""
    return (
        "span_id" in item
        and "start" in item
        and "duration" in item
        and ("meta" in item or "metrics" in item or "resource" in item)
    )


def _read(item: dict[str, Any], sink: SpanSink, where: str) -> None:
    attributes: dict[str, Any] = {}
    for key in ("meta", "metrics"):
        values = item.get(key)
        if isinstance(values, dict):
            for name, value in values.items():
                attributes.setdefault(str(name), value)
    resource_name = item.get("resource")
    if isinstance(resource_name, str):
        attributes["resource.name"] = resource_name
    start = to_nanos(item.get("start"))
    duration = item.get("duration")
    end = start + int(duration) if isinstance(duration, int) and duration > 0 else start
    name = text(item.get("name"))
    error = item.get("error")
    status: StepStatus = "error" if error in (1, True, "1") else "unset"
    service = item.get("service")
    scope = text(attributes.get("component"))
    if not scope:
        if "." in name:
            scope = name.partition(".")[0]
        elif isinstance(resource_name, str):
            scope = _PRODUCTS.get(resource_name.partition(" ")[0].lower(), "")
    sink.add_resource({"service.name": service} if isinstance(service, str) else {})
    sink.add(
        _new_span(
            RawSpan,
            (
                sink.count,
                name,
                _trace_id(item.get("trace_id")),
                normalize_id(_number(item.get("span_id"))),
                normalize_id(_number(item.get("parent_id"))),
                start,
                end,
                status,
                attributes,
                (),
                scope,
            ),
        )
    )


def _widen_trace_ids(entries: list[Entry], datadog: set[int]) -> list[Entry]:
    """The Datadog spans (file positions ``datadog``) with 128-bit trace ids where known.

    A Datadog span's ``trace_id`` is the low 64 bits of its trace id; the first span of a
    trace carries the high 64 bits as ``_dd.p.tid`` (16 hex digits). Joined they are the
    W3C trace id the rest of the stack (OpenTelemetry, the Datadog UI) shows, so a verdict
    written back as an event lands on the trace it judged.
    """
    high: dict[str, str] = {}
    for entry in entries:
        if entry.__class__ is RawSpan and entry.position in datadog:
            tid = entry.attributes.get("_dd.p.tid")
            if (
                isinstance(tid, str)
                and len(tid) == 16
                and tid.isascii()
                and all(digit in _HEX for digit in tid.lower())
                and entry.trace_id.startswith(_NO_HIGH_BITS)
            ):
                high.setdefault(entry.trace_id, tid.lower())
    if not high:
        return entries
    return [
        entry._replace(trace_id=high[entry.trace_id] + entry.trace_id[16:])
        if entry.__class__ is RawSpan and entry.position in datadog and entry.trace_id in high
        else entry
        for entry in entries
    ]


def _number(raw: object) -> object:
    """A Datadog id as its integer: dd-trace-js writes the uint64 ids as decimal strings."""
    if isinstance(raw, str) and raw.isascii() and raw.isdigit():
        return int(raw)
    return raw


def _trace_id(raw: object) -> str:
    """A Datadog trace id as 32 hex digits; snapshots number their traces from 0."""
    number = _number(raw)
    if isinstance(number, int) and not isinstance(number, bool) and number >= 0:
        # 0 is a real trace in a test-agent snapshot (its first one), not a missing id
        return format(number, "032x")
    return normalize_id(number, 32)


FORMAT = TraceFormat(
    name="datadog",
    title="Datadog APM",
    expected="a Datadog export",
    shape="an array of traces (or of payloads of traces), each an array of spans with "
    "`meta`/`metrics`, integer ids or dd-trace-js's decimal strings (read as the same "
    "integers), `start`/`duration` in ns, `error: 1`; a snapshot's trace id `0` is its first "
    "trace (a `parent_id` of `0` is a root); the 64-bit `trace_id` joined to the `_dd.p.tid` "
    "(its high 64 bits, on a trace's first span) is the 128-bit trace id the rest of the "
    "stack shows; `resource` kept as `resource.name`, `service` as `service.name`",
    learned_from="DataDog/dd-trace-py snapshots (PydanticAI, CrewAI), DataDog/dd-trace-js "
    "(Genkit), DataDog/dd-apm-test-agent snapshots",
    claims=_claims,
    keys=("span_id",),
    read=_read,
    at=(Where.DOCUMENT, Where.ITEM),
    finish=_widen_trace_ids,
)
