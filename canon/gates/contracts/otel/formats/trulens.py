"""TruLens event records: one span a row of the event table TruLens writes its spans to,
as JSON lines or as CSV (``eventtable.py`` reads the CSV into rows).

A row's ``record`` holds the span's ``name``, ``parent_span_id`` and ``status``, its
``trace`` the ``trace_id``, ``span_id`` and ``parent_id`` (decimal integers, read as the
hex ids OpenTelemetry shows), its ``record_attributes`` the span's attributes,
``start_timestamp``/``timestamp`` its start and end; a cell may be JSON or a Python
literal (pandas writes dicts as their repr; read with ``ast.literal_eval``, never run).
TruLens's span type (``ai.observability.span_type``) gives the step kind (``generation``
a model call, ``retrieval``, ``tool_invocation`` a tool call, ``agent_invocation`` an
agent, ``record_root`` the run), its ``main_input``/``main_output`` (or the record root's
``input``/``output``; else a call's one argument and what it returned) the request and
answer; the app's call right under the record root is the agent run. Rows of another
``record_type`` than a span are counted as no span.
"""

from __future__ import annotations

import ast
import functools
from typing import Any

from canon.gates.contracts.otel.formats.base import (
    Entry,
    SpanSink,
    TraceFormat,
    Where,
    text,
    type_name,
)
from canon.gates.contracts.otel.formats.records import payload, record_span
from canon.gates.contracts.otel.jsontext import loads  # json.loads's values, faster
from canon.gates.contracts.otel.rawspan import RawSpan
from canon.gates.contracts.otel.values import decode_status, normalize_id

_PREFIX = "ai.observability."
_KINDS = {
    "generation": "LLM",
    "retrieval": "RETRIEVER",
    "reranking": "RERANKER",
    "embedding": "EMBEDDING",
    "tool_invocation": "TOOL",
    "agent_invocation": "AGENT",
    "record_root": "CHAIN",
    "main": "CHAIN",
}
_SPAN_TYPE = f"{_PREFIX}span_type"
_INPUTS = (f"{_PREFIX}main.main_input", f"{_PREFIX}record_root.input")
_OUTPUTS = (f"{_PREFIX}main.main_output", f"{_PREFIX}record_root.output", f"{_PREFIX}call.return")
_ARGUMENTS = f"{_PREFIX}call.kwargs."
_ID_FORMATS = {16: "016x", 32: "032x"}
_LITERAL_LIMIT = 1_000_000  # a repr longer than any row: refused, not evaluated


def _claims(raw: dict[str, Any]) -> bool:
    return "record_attributes" in raw and "trace" in raw and "record" in raw


def _cell(raw: dict[str, Any], key: str, sink: SpanSink, where: str) -> dict[str, Any]:
    """A cell holding an object: as parsed JSON, JSON text or a Python literal's text."""
    value = raw.get(key)
    stripped = value.strip() if isinstance(value, str) else ""
    if stripped:
        value = _literal(stripped) if stripped[:2] in _REPR_STARTS else _NOT_LITERAL
        if value is _NOT_LITERAL:
            try:
                value = loads(stripped)
            except ValueError:
                raise sink.fail(
                    f"a TruLens {key!r} cell that is neither JSON nor a Python literal at {where}"
                ) from None
    if not isinstance(value, dict):
        raise sink.fail(f"a TruLens {key!r} holding {type_name(value)} at {where}")
    return value


def _input(attributes: dict[str, Any]) -> object:
    """The request a span records: its main input, else its call's one argument."""
    for key in _INPUTS:
        value = attributes.get(key)
        if value is not None:
            return value
    arguments = [key for key in attributes if key.startswith(_ARGUMENTS)]
    if len(arguments) != 1:
        return None
    value = attributes[arguments[0]]
    if isinstance(value, list) and len(value) == 1:
        return value[0]  # a positional argument, listed
    return value


def _output(attributes: dict[str, Any]) -> object:
    """The answer a span records: its main output, else what its call returned."""
    for key in _OUTPUTS:
        value = attributes.get(key)
        if value is not None:
            return value
    return None


_NOT_LITERAL = object()


_REPR_STARTS = ("{'", "['")  # how a repr of a dict or list of text starts; JSON's: '{"'


@functools.lru_cache(maxsize=64)  # a table repeats its resource cell on every row
def _literal(text: str) -> object:
    """A cell's Python literal (pandas writes a dict as its repr), or ``_NOT_LITERAL``."""
    if len(text) > _LITERAL_LIMIT:
        return _NOT_LITERAL  # longer than any row: refused, not evaluated
    if '"' not in text and "\\" not in text:
        # every string is quoted '...' and holds no quote nor escape: with the quotes
        # swapped it is JSON, read the same and several times faster; anything JSON does
        # not have (True, None, tuples, int keys) fails here and is read below
        try:
            return loads(text.replace("'", '"'))
        except ValueError:
            pass
    try:  # literal_eval reads literals only: a repr, never code
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _NOT_LITERAL


def _id(value: object, width: int = 16) -> str:
    """A TruLens id: a decimal integer (as text or a number), written as OTel's hex."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        number = int(value)  # what normalize_id does with the integer, without its checks
        return format(number, _ID_FORMATS[width]) if number > 0 else ""
    return normalize_id(value, width)


def _read(raw: dict[str, Any], sink: SpanSink, where: str) -> None:
    kind = text(raw.get("record_type")).rpartition(".")[2].upper()
    if kind and kind != "SPAN":
        sink.reject(raw)  # a log or metric row: no span
        return
    record = _cell(raw, "record", sink, where)
    trace = _cell(raw, "trace", sink, where)
    attributes = dict(_cell(raw, "record_attributes", sink, where))
    name = record.get("name")
    span_id = _id(trace.get("span_id"))
    if not span_id or not isinstance(name, str) or not name.strip():
        raise sink.fail(f"a TruLens event record without a span_id or a name at {where}")
    span_type = text(attributes.get(_SPAN_TYPE)).lower()
    oi_kind = _KINDS.get(span_type)
    if oi_kind is not None:
        attributes.setdefault("openinference.span.kind", oi_kind)
        if oi_kind == "TOOL":
            attributes.setdefault("tool.name", name.rpartition(".")[2])
    for target, value in (
        ("input.value", _input(attributes)),
        ("output.value", _output(attributes)),
    ):
        if value is not None:
            attributes.setdefault(target, value if isinstance(value, str) else payload(value))
    resource = raw.get("resource_attributes")
    if resource is not None:
        sink.add_resource(_cell(raw, "resource_attributes", sink, where))
    parent = _id(trace.get("parent_id")) or _id(record.get("parent_span_id"))
    ids = (_id(trace.get("trace_id"), 32), span_id, parent)
    times = (raw.get("start_timestamp"), raw.get("timestamp"))
    status = decode_status(record.get("status"))
    sink.add(record_span(sink, ids, name, times, status, attributes, "trulens"))


def _app_calls(entries: list[Entry], trulens: set[int]) -> list[Entry]:
    """The TruLens spans (file positions ``trulens``) with the app's call marked an agent run.

    TruLens records a run as its ``record_root`` span with the app's instrumented call right
    under it (``main``, or a wrapped app's ``_call``): that call is the run the person asked,
    whose return is the answer.
    """
    roots = {
        entry.span_id
        for entry in entries
        if entry.__class__ is RawSpan
        and entry.position in trulens
        and entry.attributes.get(_SPAN_TYPE) == "record_root"
    }
    if not roots:
        return entries
    return [
        entry._replace(attributes={**entry.attributes, "openinference.span.kind": "AGENT"})
        if entry.__class__ is RawSpan
        and entry.position in trulens
        and entry.parent_id in roots
        and entry.attributes.get("openinference.span.kind") in (None, "CHAIN")
        else entry
        for entry in entries
    ]


FORMAT = TraceFormat(
    name="trulens",
    title="TruLens event records",
    expected="TruLens event records",
    shape="event table rows (JSON lines, or CSV with `record`, `record_attributes`, `trace` "
    "columns; cells JSON or Python literals): `record.name`/`status`, `trace.trace_id`/"
    "`span_id`/`parent_id` (decimal, read as hex), `record_attributes` as the span's, "
    "`start_timestamp`/`timestamp`; `ai.observability.span_type` gives the step kind, "
    "`main_input`/`main_output` the request and answer",
    learned_from="truera/trulens (its OTel golden event tables)",
    claims=_claims,
    keys=("record_attributes",),
    read=_read,
    at=(Where.DOCUMENT, Where.ITEM),
    finish=_app_calls,
)
