"""From spans to steps: the normalizer's per-span work, kept to what a verdict needs.

Two roads give the same steps. ``step_from_raw`` classifies a span that is already decoded
(Jaeger, OTel-SDK shapes, odd OTLP) and builds its ``Step`` at once. ``otlp_columns`` reads
a run of plain OTLP JSON spans straight from the parsed JSON and returns only the columns
validation reads (step names, kinds, statuses) and those that order the spans and pick the
root (ids, start times); ``otlp_step`` builds a whole ``Step`` later, if someone asks.

Most spans of an instrumented agent carry a GenAI ``gen_ai.operation.name`` that settles
their kind on its own (a chat, an agent, or ``execute_tool`` with its ``gen_ai.tool.name``);
those are classified from those one or two attributes, found by probing the list rather
than decoding it. Every other span takes the general road: the attributes ``classify``
looks at are decoded (where they sit is worked out once per attribute layout) and the full
rules run. Of duplicate attribute keys the first wins, on every road, as in the
OpenTelemetry Collector's own attribute maps. Both roads are checked against the eager
decoder on the corpus and on random spans (``test_otel_lazy_reading.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import repeat
from operator import is_, itemgetter
from typing import Any, NamedTuple, cast

from canon.gates.contracts.execution import (
    NO_PAYLOAD,
    DataSource,
    Step,
    StepKind,
    StepPayload,
    StepStatus,
)
from canon.gates.contracts.otel.attributes import KVAttributes
from canon.gates.contracts.otel.classify import AGENT_OPS, CLASSIFY_KEYS, MODEL_OPS, classify
from canon.gates.contracts.otel.payloads import LazyToolPayload
from canon.gates.contracts.otel.rawspan import OtlpRun, RawSpan
from canon.gates.contracts.otel.values import (
    decode_kv_list,
    decode_status,
    decode_value,
    normalize_id,
    to_nanos,
)

UNNAMED = "(unnamed span)"
_OPERATION = "gen_ai.operation.name"
_TOOL = "gen_ai.tool.name"
_TOOL_STATUS = "gen_ai.tool.status"
_KNOWLEDGE_BASE = "aws.bedrock.knowledge_base.id"
_DATA_SOURCE = "gen_ai.data_source.id"
_STEP_KEYS = CLASSIFY_KEYS | {_TOOL_STATUS}
# The operations that settle a span's kind whatever else it carries (classify's first rules).
_KIND_OF_OPERATION: dict[str, StepKind] = {
    **dict.fromkeys(MODEL_OPS, "model_call"),
    **dict.fromkeys(AGENT_OPS, "agent"),
    "execute_tool": "tool_call",
}
_ZERO_IDS = frozenset({"", "0", "0000000000000000", "00000000000000000000000000000000"})
_HEX_PREFIXES = frozenset({"0x", "0X"})
_FIRST_TWO = itemgetter(slice(0, 2))
_INT_STATUS: dict[int, StepStatus] = {0: "unset", 1: "ok", 2: "error"}
_STATUS_OF_CODE: Callable[[Any], StepStatus] = _INT_STATUS.__getitem__
_KEY = itemgetter("key")
_VALUE = itemgetter("value")
_STRING_VALUE = itemgetter("stringValue")
_FIRST = itemgetter(0)
_SECOND = itemgetter(1)
_new = tuple.__new__

# Where each ``_STEP_KEYS`` key sits in one attribute layout (the same keys, in order).
_Layout = tuple[tuple[str, int], ...]


class RunColumns(NamedTuple):
    """What validation and span ordering read of a run of OTLP spans, one entry per span."""

    names: list[str]
    kinds: list[StepKind]
    statuses: list[StepStatus]
    span_ids: list[str]
    parent_ids: list[str]
    starts: list[Any]  # as written: ``start_column`` reads them


def step_from_raw(span: RawSpan) -> Step:
    """The step of a span already decoded."""
    attrs = span.attributes
    kind, name, status = _classify(span.name or UNNAMED, attrs, attrs, span.status)
    fields = (name, kind, span.span_id, span.parent_id, span.start_ns, span.end_ns, status)
    return _build_step(fields, attrs, span.events)


def otlp_step(
    span: Any,
    name: str,
    kind: StepKind,
    span_id: str,
    parent_id: str,
    start: int | str,
    status: StepStatus,
) -> Step:
    """The whole step of an OTLP JSON span, given what ``otlp_columns`` found for it.

    ``start`` is in nanoseconds, or still the digit string ``start_column`` kept.
    """
    if span.__class__ is not dict:
        span = span.as_dict()  # a typed span: its JSON
    items = span.get("attributes")
    attrs = KVAttributes(items) if items.__class__ is list else decode_kv_list(items)
    end = to_nanos(span.get("endTimeUnixNano"))
    fields = (name, kind, span_id, parent_id, as_nanos(start), end, status)
    return _build_step(fields, attrs, span.get("events") or ())


def _classify(
    name: str, hot: Mapping[str, Any], attrs: Mapping[str, Any], status: StepStatus
) -> tuple[StepKind, str, StepStatus]:
    """Kind, step name and status by the full rules; ``hot`` holds the span's ``_STEP_KEYS``."""
    kind, step_name = classify(name, hot, attrs)
    if kind == "tool_call" and status == "unset" and hot.get(_TOOL_STATUS) in ("error", "failed"):
        status = "error"  # a tool that reports its own failure on an unset span status
    return kind, step_name, status


def _build_step(
    fields: tuple[str, StepKind, str, str, int, int, StepStatus],
    attrs: Mapping[str, Any],
    events: object,
) -> Step:
    """A ``Step`` from its classified fields (name, kind, ids, times, status) and attributes."""
    name, kind, span_id, parent_id, start, end, status = fields
    payload: StepPayload = LazyToolPayload(attrs, events) if kind == "tool_call" else NO_PAYLOAD
    sources: tuple[DataSource, ...] = ()
    knowledge_base = attrs.get(_KNOWLEDGE_BASE) or attrs.get(_DATA_SOURCE)
    if isinstance(knowledge_base, str) and knowledge_base:
        sources = (DataSource(knowledge_base, "knowledge_base"),)
    return _new(
        Step,
        (name, kind, span_id, parent_id, start, end, status, sources, attrs, payload),
    )


def otlp_columns(run: OtlpRun) -> RunColumns:
    """Names, kinds, statuses, ids and start times of every span in ``run``, in file order.

    Fields are read column by column with C-level ``map`` passes; a column with anything
    unusual in it is decoded value by value with the full decoders instead (same results).
    """
    spans = run.spans
    names = list(run.names)  # tool calls get their tool's name below
    if set(map(type, names)) != {str} or "" in names:
        names = [name if isinstance(name, str) and name else UNNAMED for name in names]
    statuses = _statuses(_column(spans, "status"))
    layouts: dict[tuple[Any, ...], _Layout] = {}
    attribute_lists = _column(spans, "attributes")
    kinds = _leading_kinds(attribute_lists, statuses, names)
    if kinds is None:
        kinds = [
            _operation_kind(items, at, statuses, names) for at, items in enumerate(attribute_lists)
        ]
    for position, kind in enumerate(kinds):
        if kind is None:  # no GenAI operation, or an odd one: the general road reads the span
            hot, attrs = _hot_attributes(attribute_lists[position], layouts)
            kinds[position], names[position], statuses[position] = _classify(
                names[position], hot, attrs, statuses[position]
            )
    return RunColumns(
        names,
        cast("list[StepKind]", kinds),  # every None was classified above
        statuses,
        _ids(run.span_ids),
        _repeated_ids(_column(spans, "parentSpanId")),
        run.starts,
    )


def _operation_kind(
    items: Any, position: int, statuses: list[StepStatus], names: list[str]
) -> StepKind | None:
    """The kind a span's ``gen_ai.operation.name`` settles (a tool call's name written into
    ``names``), or None for the general road: no such operation, or an odd one."""
    try:
        item = items[0]
        if item["key"] != _OPERATION:
            item = _first_item(items, _OPERATION)
        kind = _KIND_OF_OPERATION.get(item["value"]["stringValue"])
        if kind == "tool_call":
            item = items[1]
            if item["key"] != _TOOL:
                item = _first_item(items, _TOOL)
            tool = item["value"]["stringValue"].strip()
            # an unset span status may still be overridden by gen_ai.tool.status
            if not tool or statuses[position] == "unset":
                return None
            names[position] = tool
        return kind
    except (LookupError, TypeError, AttributeError):
        return None


def _leading_kinds(
    attribute_lists: list[Any], statuses: list[StepStatus], names: list[str]
) -> list[StepKind | None] | None:
    """``_operation_kind`` of every span, read column by column with C-level ``map`` passes
    when every span's attributes start with ``gen_ai.operation.name`` (and every tool call's
    go on with ``gen_ai.tool.name``) holding text, as GenAI instrumentations write them;
    None when any is otherwise (``_operation_kind`` reads span by span)."""
    try:
        firsts = list(map(_FIRST, attribute_lists))
        if list(map(_KEY, firsts)).count(_OPERATION) != len(firsts):
            return None
        kinds: list[StepKind | None]
        kinds = list(map(_KIND_OF_OPERATION.get, map(_STRING_VALUE, map(_VALUE, firsts))))
        calls = [at for at, kind in enumerate(kinds) if kind == "tool_call"]
        seconds = list(map(_SECOND, map(attribute_lists.__getitem__, calls)))
        if list(map(_KEY, seconds)).count(_TOOL) != len(seconds):
            return None
        tools = list(map(str.strip, map(_STRING_VALUE, map(_VALUE, seconds))))
    except (LookupError, TypeError, AttributeError):
        return None
    for position, tool in zip(calls, tools, strict=True):
        # an unset span status may still be overridden by gen_ai.tool.status
        if not tool or statuses[position] == "unset":
            kinds[position] = None
        else:
            names[position] = tool
    return kinds


def _first_item(items: list[Any], key: str) -> Any:
    """The first attribute item with ``key``, or None (a malformed item raises)."""
    for item in items:
        if item["key"] == key:
            return item
    return None


def _hot_attributes(
    items: object, layouts: dict[tuple[Any, ...], _Layout]
) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """The span's ``_STEP_KEYS`` attributes decoded, and all of its attributes as a mapping."""
    if items.__class__ is list:
        try:
            keys = tuple(map(_KEY, items))
            layout = layouts.get(keys)
            if layout is None:
                layout = layouts[keys] = _layout(keys)
        except (TypeError, KeyError, IndexError):
            pass  # a malformed list: the careful decoder reads it below
        else:
            hot = {key: decode_value(items[at].get("value")) for key, at in layout}
            return hot, KVAttributes(items)
    decoded = decode_kv_list(items)
    return decoded, decoded


def _layout(keys: tuple[Any, ...]) -> _Layout:
    """Where each ``_STEP_KEYS`` key sits among ``keys`` (the first of duplicates wins)."""
    hot: dict[str, int] = {}
    for position, key in enumerate(keys):
        if key in _STEP_KEYS:
            hot.setdefault(key, position)
    return tuple(hot.items())


def _column(spans: list[dict[str, Any]], key: str) -> list[Any]:
    return list(map(dict.get, spans, repeat(key)))


def _ids(raw: list[Any]) -> list[str]:
    """Span ids: kept as written when every one is plain lower-case ASCII alphanumeric text.

    That is ``normalize_id``'s own fast path, checked for the whole column in a few C
    calls on the joined text instead of once per id.
    """
    try:
        joined = "\t".join(raw)
    except TypeError:  # an id that is not text
        return list(map(normalize_id, raw))
    if joined.isascii():
        packed = joined.encode("ascii")
        if (
            packed.count(b"\t") == len(raw) - 1  # no id holds the separator itself
            and packed.replace(b"\t", b"").isalnum()
            and packed == packed.lower()  # upper-case hex is lower-cased by normalize_id
            and _ZERO_IDS.isdisjoint(raw)  # (so no id is empty either)
            and (
                # hex ids hold no "x" at all, which rules a "0x" prefix out at memchr speed
                (b"x" not in packed and b"X" not in packed)
                or _HEX_PREFIXES.isdisjoint(map(_FIRST_TWO, raw))
            )
        ):
            return raw
    return list(map(normalize_id, raw))


def _repeated_ids(raw: list[Any]) -> list[str]:
    """Parent ids: few distinct values, so each distinct one is normalized once."""
    try:
        distinct = set(raw)
    except TypeError:
        return list(map(normalize_id, raw))
    if set(map(type, distinct)) != {str}:
        # 1, 1.0 and True are one set member but normalize differently
        return list(map(normalize_id, raw))
    table = {value: normalize_id(value) for value in distinct}
    if all(map(is_, table, table.values())):  # every one already as normalize_id writes it
        return raw
    return list(map(table.__getitem__, raw))


def start_column(raw: list[Any]) -> list[int] | list[str]:
    """Start times that sort like the instants they are: nanoseconds, or kept digit strings.

    OTLP writes nanoseconds as digit strings. When every one has the same number of
    digits (18 or more, no leading zero: nanoseconds since 1973, which ``to_nanos`` reads
    as written), the strings sort as their numbers do and are kept as they are: turning
    hundreds of 19-digit strings into ints is a large share of reading a trace, and only a
    built step needs the number (``as_nanos``).
    """
    try:
        joined = "".join(raw)
    except TypeError:
        return nanos_column(raw)
    width = len(raw[0]) if raw else 0
    if (
        width >= 18
        and joined.isascii()
        and joined.encode("ascii").isdigit()  # bytes.isdigit: str.isdigit is per character
        and len(set(map(len, raw))) == 1
        and "0" not in joined[::width]  # the first digit of each
    ):
        return raw
    return nanos_column(raw)


def as_nanos(start: int | str) -> int:
    """A start time of ``start_column`` in nanoseconds."""
    return start if start.__class__ is int else int(start)


def nanos_column(raw: list[Any]) -> list[int]:
    """Timestamps: OTLP writes nanoseconds as digit strings; anything else goes to to_nanos."""
    try:
        joined = "".join(raw)
        if joined.isascii() and joined.encode("ascii").isdigit():  # bytes.isdigit: fast
            numbers = list(map(int, raw))
            if min(numbers) >= 100_000_000_000_000_000:  # already nanoseconds
                return numbers
    except (TypeError, ValueError):  # a missing, empty or non-text timestamp
        pass
    return list(map(to_nanos, raw))


def _statuses(raw: list[Any]) -> list[StepStatus]:
    """Span statuses: ``{"code": 0|1|2}`` objects are looked up in C, anything else decoded."""
    try:
        distinct = set(map(dict.get, raw, repeat("code")))
    except TypeError:  # a status that is missing or not an object, or a code that is a list
        return list(map(decode_status, raw))
    # the type check keeps True/False (equal to 1/0) on the full decoder's road
    if distinct <= _INT_STATUS.keys() and set(map(type, distinct)) == {int}:
        if len(distinct) == 1:  # every span alike, the usual trace: no second pass
            return [_STATUS_OF_CODE(distinct.pop())] * len(raw)
        return list(map(_STATUS_OF_CODE, map(dict.get, raw, repeat("code"))))
    return list(map(decode_status, raw))
