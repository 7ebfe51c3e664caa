"""From one span to one ``Step``: the normalizer's per-span work, kept to what a verdict needs.

Two roads give the same step. ``step_from_raw`` classifies a span that is already decoded
(Jaeger, OTel-SDK shapes, odd OTLP). ``otlp_steps`` reads a run of plain OTLP JSON spans
straight from the parsed JSON: ids, times and status are decoded a column at a time,
attributes stay the parsed key/value list until read (``KVAttributes``), tool arguments and
results are parsed only when read (``LazyToolPayload``), and the common GenAI-semconv spans
(a chat, agent or ``execute_tool`` operation and nothing that could change the outcome) are
classified from two attribute values, without decoding the rest. Both roads are checked
against each other on the corpus and on random spans (``test_otel_lazy_reading.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import repeat
from operator import itemgetter
from typing import Any

from canon.gates.contracts.execution import (
    NO_PAYLOAD,
    DataSource,
    Step,
    StepPayload,
    StepStatus,
)
from canon.gates.contracts.otel.attributes import KVAttributes
from canon.gates.contracts.otel.classify import AGENT_OPS, CLASSIFY_KEYS, MODEL_OPS, classify
from canon.gates.contracts.otel.payloads import LazyToolPayload
from canon.gates.contracts.otel.spans import OtlpRun, RawSpan
from canon.gates.contracts.otel.values import (
    decode_kv_list,
    decode_status,
    decode_value,
    normalize_id,
    to_nanos,
)

UNNAMED = "(unnamed span)"
_STEP_KEYS = CLASSIFY_KEYS | {"gen_ai.tool.status"}
# Attributes that, when present, send a span down the general road: they can change the
# kind, the status or the sources of a span the quick road would otherwise settle.
_QUICK_BLOCKERS = frozenset(
    {"gen_ai.tool.status", "aws.bedrock.knowledge_base.id", "gen_ai.data_source.id"}
)
_ZERO_IDS = frozenset({"", "0", "0000000000000000", "00000000000000000000000000000000"})
_HEX_PREFIXES = frozenset({"0x", "0X"})
_FIRST_TWO = itemgetter(slice(0, 2))
_INT_STATUS: dict[int, StepStatus] = {0: "unset", 1: "ok", 2: "error"}
_STATUS_OF_CODE: Callable[[Any], StepStatus] = _INT_STATUS.__getitem__
_KEY = itemgetter("key")
_new = tuple.__new__


def step_from_raw(span: RawSpan) -> Step:
    """The step of a span already decoded."""
    attrs = span.attributes
    return _general_step(
        span.name,
        attrs,
        attrs,
        span.events,
        (span.span_id, span.parent_id, span.start_ns, span.end_ns, span.status),
    )


def _general_step(
    name: str,
    hot: Mapping[str, Any],
    attrs: Mapping[str, Any],
    events: object,
    fields: tuple[str, str, int, int, StepStatus],
) -> Step:
    """Classify with the full rules; ``hot`` holds at least the span's ``_STEP_KEYS``.

    ``fields`` = span id, parent id, start, end and status, already decoded.
    """
    span_id, parent_id, start, end, status = fields
    kind, step_name = classify(name or UNNAMED, hot, attrs)
    payload = NO_PAYLOAD
    if kind == "tool_call":
        payload = LazyToolPayload(attrs, events)
        if status == "unset" and hot.get("gen_ai.tool.status") in ("error", "failed"):
            status = "error"
    sources: tuple[DataSource, ...] = ()
    knowledge_base = hot.get("aws.bedrock.knowledge_base.id") or hot.get("gen_ai.data_source.id")
    if isinstance(knowledge_base, str) and knowledge_base:
        sources = (DataSource(knowledge_base, "knowledge_base"),)
    return _new(
        Step,
        (step_name, kind, span_id, parent_id, start, end, status, sources, attrs, payload),
    )


def otlp_steps(run: OtlpRun, steps: list[Step]) -> tuple[list[int], list[str], list[str]]:
    """Append the step of every span in ``run`` to ``steps``, in file order.

    Returns the run's start times, span ids and parent ids (the steps hold them too; the
    columns save the caller a pass).

    Fields are read column by column with C-level ``map`` passes; a column with anything
    unusual in it is decoded value by value with the full decoders instead (same results).
    Spans of one trace share a few attribute layouts (the same keys in the same order), so
    where the keys that decide the quick road sit is worked out once per layout.
    """
    spans = run.spans
    names = _column(spans, "name")
    if set(map(type, names)) != {str}:
        names = [name if isinstance(name, str) else "" for name in names]
    span_ids = _ids(_required_column(spans, "spanId"))
    parent_ids = _repeated_ids(_column(spans, "parentSpanId"))
    starts = _nanos(_required_column(spans, "startTimeUnixNano"))
    layouts: dict[tuple[Any, ...], _Layout] = {}
    append = steps.append
    for name, span_id, parent_id, start, end, status, items, events in zip(
        names,
        span_ids,
        parent_ids,
        starts,
        _nanos(_column(spans, "endTimeUnixNano")),
        _statuses(_column(spans, "status")),
        _column(spans, "attributes"),
        _column(spans, "events"),
        strict=True,
    ):
        layout = None
        if items.__class__ is list:
            try:
                keys = tuple(map(_KEY, items))
                layout = layouts.get(keys)
                if layout is None:
                    layout = layouts[keys] = _layout(keys)
            except (TypeError, KeyError, IndexError):
                layout = None  # a malformed list: the careful decoder reads it below
        if layout is None:
            decoded = decode_kv_list(items)
            fields = (span_id, parent_id, start, end, status)
            append(_general_step(name, decoded, decoded, events or (), fields))
            continue
        attrs = KVAttributes(items)
        op_at, tool_at, quick, hot_at = layout
        kind = ""
        if quick and op_at >= 0:
            value = items[op_at].get("value")
            if value.__class__ is dict and "stringValue" in value:
                op = value["stringValue"]
            else:
                op = decode_value(value)
            # the first rules of classify: the operation settles the kind on its own
            if op.__class__ is str:
                if op in MODEL_OPS:
                    kind = "model_call"
                elif op in AGENT_OPS:
                    kind = "agent"
                elif op == "execute_tool" and tool_at >= 0:
                    value = items[tool_at].get("value")
                    if value.__class__ is dict and "stringValue" in value:
                        tool = value["stringValue"]
                    else:
                        tool = decode_value(value)
                    if tool.__class__ is str:
                        step_name = tool.strip()
                        kind = "tool_call" if step_name else ""
        if not kind:
            # the layout knows where each classification key sits: decode just those
            hot = {key: decode_value(items[at].get("value")) for key, at in hot_at}
            fields = (span_id, parent_id, start, end, status)
            append(_general_step(name, hot, attrs, events or (), fields))
            continue
        payload: StepPayload
        if kind == "tool_call":
            payload = LazyToolPayload(attrs, events or ())
        else:
            payload = NO_PAYLOAD
            step_name = name or UNNAMED
        append(
            _new(
                Step,
                (step_name, kind, span_id, parent_id, start, end, status, (), attrs, payload),
            )
        )
    return starts, span_ids, parent_ids


_Layout = tuple[int, int, bool, tuple[tuple[str, int], ...]]


def _layout(keys: tuple[Any, ...]) -> _Layout:
    """For one attribute layout: where the operation and the tool name sit, whether the
    quick road may settle a span with these keys, and where each ``_STEP_KEYS`` key sits
    (the last of duplicates wins, as in ``decode_kv_list``)."""
    hot: dict[str, int] = {}
    for position, key in enumerate(keys):
        if key in _STEP_KEYS:
            hot[key] = position
    return (
        hot.get("gen_ai.operation.name", -1),
        hot.get("gen_ai.tool.name", -1),
        _QUICK_BLOCKERS.isdisjoint(hot),
        tuple(hot.items()),
    )


def _required_column(spans: list[dict[str, Any]], key: str) -> list[Any]:
    return list(map(itemgetter(key), spans))


def _column(spans: list[dict[str, Any]], key: str) -> list[Any]:
    return list(map(dict.get, spans, repeat(key)))


def _ids(raw: list[Any]) -> list[str]:
    """Span ids: kept as written when every one is plain ASCII alphanumeric text.

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
    return list(map(table.__getitem__, raw))


def _nanos(raw: list[Any]) -> list[int]:
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
        codes = list(map(dict.get, raw, repeat("code")))
    except TypeError:  # a status that is missing or not an object
        return list(map(decode_status, raw))
    try:
        distinct = set(codes)
    except TypeError:  # a code that is a list or an object
        return list(map(decode_status, raw))
    # the type check keeps True/False (equal to 1/0) on the full decoder's road
    if distinct <= _INT_STATUS.keys() and set(map(type, distinct)) == {int}:
        return list(map(_STATUS_OF_CODE, codes))
    return list(map(decode_status, raw))
