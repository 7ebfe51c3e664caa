"""Plain OTLP JSON trace text read into msgspec structs: the fast road from a file to its spans.

Parsing is most of the time a trace file takes, and most of parsing is building a dict
for every attribute item and another for its value. Decoded into structs that declare
the OTLP fields, a file builds fewer, smaller objects (about 1.7x faster to parse, read
the span columns and free again). Every struct forbids fields it does not declare and
every typed field has its JSON type, so a file that is anything but plain OTLP JSON
spans (a log record, an unknown field, an attribute key that is not text, a value tag
OTLP does not have) is not read here at all: it goes the ``dict`` road, as before. What
is read here reads exactly as there: ``as_dict`` gives the JSON a span was parsed from
(keys in OTLP's order), and the columns below follow ``steps.otlp_columns`` rule by
rule. This module imports msgspec; ``otlptext.otlp_documents`` imports it only when
msgspec is installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain, repeat
from operator import attrgetter, is_
from typing import Any

import msgspec
from msgspec import UNSET, Struct, UnsetType

from canon.gates.contracts.execution import StepKind, StepStatus
from canon.gates.contracts.otel.formats.otlp import FORMAT as OTLP
from canon.gates.contracts.otel.rawspan import OtlpRun
from canon.gates.contracts.otel.spans import SpanBatch

# the rules and tables of steps.otlp_columns, which run_columns follows for structs
from canon.gates.contracts.otel.steps import (
    _INT_STATUS,
    _KIND_OF_OPERATION,
    _OPERATION,
    _STATUS_OF_CODE,
    _TOOL,
    UNNAMED,
    RunColumns,
    _classify,
    _hot_attributes,
    _ids,
    _Layout,
    _repeated_ids,
)
from canon.gates.contracts.otel.values import decode_kv_list, decode_status

_SPAN_ID = attrgetter("spanId")
_START = attrgetter("startTimeUnixNano")
_NAME = attrgetter("name")
_ATTRIBUTES = attrgetter("attributes")
_KEY = attrgetter("key")
_STATUS = attrgetter("status")
_CODE = attrgetter("code")


class OtlpValue(Struct, forbid_unknown_fields=True, omit_defaults=True, gc=False):
    """An attribute's ``AnyValue``: one of OTLP's value tags (several decode by precedence)."""

    stringValue: str | UnsetType = UNSET
    boolValue: bool | UnsetType = UNSET
    intValue: int | str | UnsetType = UNSET
    doubleValue: float | int | str | UnsetType = UNSET
    bytesValue: str | UnsetType = UNSET
    arrayValue: Any = UNSET
    kvlistValue: Any = UNSET


class OtlpItem(Struct, forbid_unknown_fields=True, gc=False):
    """One attribute: ``{"key": ..., "value": {...}}``."""

    key: str
    value: OtlpValue


class OtlpStatus(Struct, forbid_unknown_fields=True, omit_defaults=True, gc=False):
    """A span status object."""

    code: Any = UNSET
    message: Any = UNSET


# gc=False: parsed JSON holds no reference cycles, so the collector need not track these
class OtlpSpan(Struct, forbid_unknown_fields=True, omit_defaults=True, gc=False):
    """One OTLP JSON span; fields not in the file stay ``UNSET``."""

    traceId: Any = UNSET
    spanId: Any = UNSET
    parentSpanId: Any = UNSET
    traceState: Any = UNSET
    flags: Any = UNSET
    name: Any = UNSET
    kind: Any = UNSET
    startTimeUnixNano: Any = UNSET
    endTimeUnixNano: Any = UNSET
    attributes: list[OtlpItem] | UnsetType = UNSET
    droppedAttributesCount: Any = UNSET
    events: Any = UNSET
    droppedEventsCount: Any = UNSET
    links: Any = UNSET
    droppedLinksCount: Any = UNSET
    status: OtlpStatus | UnsetType = UNSET

    def as_dict(self) -> dict[str, Any]:
        """The span as ``json.loads`` gives it (its keys in OTLP's order, not the file's)."""
        span: dict[str, Any] = msgspec.to_builtins(self)
        return span

    def get(self, field: str, default: Any = None) -> Any:
        """A scalar field, as ``dict.get`` reads it from the parsed JSON."""
        value = getattr(self, field, UNSET)
        return default if value is UNSET else value


class OtlpScopeSpans(Struct, forbid_unknown_fields=True, omit_defaults=True, gc=False):
    """The spans of one instrumentation scope."""

    scope: Any = UNSET
    spans: list[OtlpSpan] | UnsetType = UNSET
    schemaUrl: Any = UNSET


class OtlpResourceSpans(Struct, forbid_unknown_fields=True, omit_defaults=True, gc=False):
    """The scopes of one resource."""

    resource: Any = UNSET
    scopeSpans: list[OtlpScopeSpans] | UnsetType = UNSET
    schemaUrl: Any = UNSET


class OtlpDocument(Struct, forbid_unknown_fields=True, gc=False):
    """A whole OTLP JSON trace export."""

    resourceSpans: list[OtlpResourceSpans]


_DECODE = msgspec.json.Decoder(OtlpDocument).decode


def decode_document(text: str) -> OtlpDocument | None:
    """``text`` as plain OTLP JSON spans, or None when it is anything else."""
    try:
        return _DECODE(text)
    except (ValueError, RecursionError):  # msgspec's DecodeError and ValidationError
        return None


def decode_documents(text: str) -> list[OtlpDocument] | None:
    """``text`` as one OTLP JSON document or as OTLP JSON lines (a Collector file export),
    split as ``parse_trace_text`` splits them; None unless every line is plain OTLP."""
    document = decode_document(text)
    if document is not None:
        return [document]
    documents = []
    for line in text.splitlines() if "\n" in text.strip() else ():
        if line.strip():
            document = decode_document(line)
            if document is None:
                return None  # the first line of a file that is not JSON lines ends it here
            documents.append(document)
    return documents or None


def document_batch(documents: list[OtlpDocument]) -> SpanBatch | None:
    """The spans of ``documents`` as ``collect_spans`` collects them, or None when a span
    lacks an id, a start time or a name, or there are none (the ``dict`` road reads it)."""
    entries: list[Any] = []
    resource: dict[str, Any] = {}
    count = 0
    blocks = chain.from_iterable(document.resourceSpans for document in documents)
    for block in blocks:
        if isinstance(block.resource, dict):
            resource.update(decode_kv_list(block.resource.get("attributes")))
        if block.scopeSpans is UNSET:
            continue
        for scope_block in block.scopeSpans:
            spans = scope_block.spans
            if spans is UNSET or not spans:
                continue
            columns = (
                list(map(_SPAN_ID, spans)),
                list(map(_START, spans)),
                list(map(_NAME, spans)),
            )
            if any(map(is_, chain.from_iterable(columns), repeat(UNSET))):
                return None
            scope = scope_block.scope or None  # the dict road looks for a legacy name then
            name = scope.get("name") if isinstance(scope, dict) else None
            scope_name = name if isinstance(name, str) else ""
            entries.append(OtlpRun(scope_name, spans, count, *columns, typed=True))
            count += len(spans)
    return SpanBatch(entries, resource, formats=(OTLP.title,)) if count else None


def field_column(spans: list[OtlpSpan], field: str) -> list[Any]:
    """One field of every span, ``None`` where the file has none (as ``dict.get`` reads)."""
    values = list(map(attrgetter(field), spans))
    if any(map(is_, values, repeat(UNSET))):
        return [None if value is UNSET else value for value in values]
    return values


def attribute_keys(span: OtlpSpan) -> Iterator[str]:
    """The attribute keys of a span, in order (a TypeError when it has no attribute list)."""
    return map(_KEY, span.attributes)  # type: ignore[arg-type]  # UNSET raises, on purpose


def all_attribute_keys(spans: list[OtlpSpan]) -> set[str]:
    """Every attribute key of every span (a TypeError when one has no attribute list)."""
    return set(map(_KEY, chain.from_iterable(map(_ATTRIBUTES, spans))))


def run_columns(run: OtlpRun) -> RunColumns:
    """``steps.otlp_columns`` of a run of structs: the same rules, read from fields."""
    spans: list[OtlpSpan] = run.spans
    names = list(run.names)
    if set(map(type, names)) != {str} or "" in names:
        names = [name if isinstance(name, str) and name else UNNAMED for name in names]
    statuses = _statuses(spans)
    kinds: list[StepKind] = []
    layouts: dict[tuple[Any, ...], _Layout] = {}
    for position, items in enumerate(map(_ATTRIBUTES, spans)):
        kind = _kind(items)
        if kind == "tool_call":
            # the dict road looks at the second item first and gives up without one
            tool = _string_of(items, 1, _TOOL) if len(items) > 1 else UNSET
            tool = tool.strip() if tool.__class__ is str else ""
            # an unset span status may still be overridden by gen_ai.tool.status
            if tool and statuses[position] != "unset":
                names[position] = tool
            else:
                kind = None
        if kind is None:
            # no GenAI operation, or an odd one: the general road reads the span's JSON
            plain = None if items is UNSET else msgspec.to_builtins(items)
            hot, attrs = _hot_attributes(plain, layouts)
            kind, names[position], statuses[position] = _classify(
                names[position], hot, attrs, statuses[position]
            )
        kinds.append(kind)
    return RunColumns(
        names,
        kinds,
        statuses,
        _ids(run.span_ids),
        _repeated_ids(field_column(spans, "parentSpanId")),
        run.starts,
    )


def _kind(items: list[OtlpItem] | UnsetType) -> StepKind | None:
    """The kind a span's ``gen_ai.operation.name`` settles, or None."""
    if items.__class__ is not list:
        return None
    return _KIND_OF_OPERATION.get(_string_of(items, 0, _OPERATION))


def _string_of(items: list[OtlpItem], at: int, key: str) -> Any:
    """The ``stringValue`` of the first ``key`` item (looked for at ``at`` first), or UNSET."""
    if at < len(items) and items[at].key == key:
        return items[at].value.stringValue
    for item in items:
        if item.key == key:
            return item.value.stringValue
    return UNSET


def _statuses(spans: list[OtlpSpan]) -> list[StepStatus]:
    """``steps._statuses`` of the spans' status structs."""
    try:
        codes = list(map(_CODE, map(_STATUS, spans)))
        distinct = set(codes)
    except (AttributeError, TypeError):  # a span without a status, or a code that is a list
        return [_careful_status(span.status) for span in spans]
    if distinct <= _INT_STATUS.keys() and set(map(type, distinct)) == {int}:
        if len(distinct) == 1:
            return [_STATUS_OF_CODE(distinct.pop())] * len(spans)
        return list(map(_STATUS_OF_CODE, codes))
    return [_careful_status(span.status) for span in spans]


def _careful_status(status: OtlpStatus | UnsetType) -> StepStatus:
    return decode_status(None if status is UNSET else msgspec.to_builtins(status))
