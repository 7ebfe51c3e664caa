"""What the exports of evaluation and tracing tools share: a run or span record (LangSmith's
runs, deepeval's spans, the OpenAI Agents SDK's spans) laid out as OpenInference attributes.

Those tools record a step as a kind (``run_type``, a span ``type``) with its inputs and
outputs as JSON values, not as OTel attributes. Written as the OpenInference attributes
Canon already reads (``openinference.span.kind``, ``input.value``, ``output.value``,
``tool.name``, ``llm.model_name``), they classify and give their request and answer the
way any OpenInference span does, with no rule of their own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from canon.gates.contracts.execution import StepStatus
from canon.gates.contracts.otel.formats.base import SpanSink, held_trace, type_name
from canon.gates.contracts.otel.rawspan import RawSpan
from canon.gates.contracts.otel.values import normalize_id, to_nanos

# a record's kind, lower-cased -> its OpenInference span kind
_KINDS = {
    "llm": "LLM",
    "chat_model": "LLM",
    "generation": "LLM",
    "response": "LLM",
    "tool": "TOOL",
    "function": "TOOL",
    "retriever": "RETRIEVER",
    "file_search": "RETRIEVER",
    "embedding": "EMBEDDING",
    "agent": "AGENT",
    "chain": "CHAIN",
    "base": "CHAIN",
    "prompt": "CHAIN",
    "parser": "CHAIN",
    "handoff": "CHAIN",
    "guardrail": "GUARDRAIL",
}
_UUID_DASHES = (8, 13, 18, 23)
_new_span = tuple.__new__  # a RawSpan without NamedTuple.__new__'s argument handling


def _json_text(value: object) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


def _encoder() -> Callable[[object], str]:
    """msgspec's JSON encoder (several times faster), or the standard library's without it."""
    try:
        import msgspec
    except ImportError:  # an optional speed-up, as for reading (jsontext.py)
        return _json_text
    encode = msgspec.json.Encoder().encode

    def fast(value: object) -> str:
        try:
            return encode(value).decode()
        except (TypeError, ValueError, OverflowError):  # not from JSON: as JSON can
            return _json_text(value)

    return fast


_encode = _encoder()


def payload(value: object) -> str:
    """A record's input or output as ``input.value``/``output.value`` text (JSON)."""
    return value if isinstance(value, str) else _encode(value)


def record_attributes(
    kind: str,
    name: str,
    inputs: object,
    outputs: object,
    model: object = None,
) -> dict[str, Any]:
    """The OpenInference attributes of one record: its kind, payloads, tool and model."""
    attributes: dict[str, Any] = {}
    oi_kind = _KINDS.get(kind.lower()) if kind else None
    if oi_kind is not None:
        attributes["openinference.span.kind"] = oi_kind
        if oi_kind == "TOOL" and name:
            attributes["tool.name"] = name
    if inputs is not None:
        attributes["input.value"] = payload(inputs)
    if outputs is not None:
        attributes["output.value"] = payload(outputs)
    if isinstance(model, str) and model:
        attributes["llm.model_name"] = model
    return attributes


def record_id(raw: object, width: int = 16) -> str:
    """A record's id as Canon writes ids: a UUID without its dashes, else ``normalize_id``
    (a word id such as the OpenAI Agents SDK's ``span_3f2a...`` lower-cased, as it does,
    without its slower search for hex or base64)."""
    if isinstance(raw, str):
        if len(raw) == 36 and all(raw[at] == "-" for at in _UUID_DASHES):
            return normalize_id(raw.replace("-", ""), width)
        if "_" in raw and raw.isascii() and raw.replace("_", "").isalnum() and raw[:2] != "0x":
            return raw.lower()
    return normalize_id(raw, width)


def record_span(
    sink: SpanSink,
    ids: tuple[str, str, str],
    name: str,
    times: tuple[object, object],
    status: StepStatus,
    attributes: dict[str, Any],
    scope: str,
) -> RawSpan:
    """A record as the span built at ``sink.count``: ``ids`` are its trace, own and parent
    ids, ``times`` its start and end as written (a missing end is its start)."""
    trace, span_id, parent = ids
    start = to_nanos(times[0])
    end = to_nanos(times[1]) or start
    return _new_span(
        RawSpan,
        (sink.count, name, trace, span_id, parent, start, end, status, attributes, (), scope),
    )


def listed_records(
    raw: dict[str, Any], keys: Iterable[str], sink: SpanSink, where: str, what: str
) -> Iterator[tuple[str, dict[str, Any], str]]:
    """Each object listed under ``keys`` of ``raw``, with its key and its place for errors;
    a key holding no list, or an item that is no object, refuses the file (``what`` names
    the records, "a deepeval span")."""
    for key in keys:
        held = raw.get(key)
        if held is None:
            continue
        if not isinstance(held, list):
            raise sink.fail(f"{key!r} holding {type_name(held)} at {where}")
        for at, item in enumerate(held):
            if not isinstance(item, dict):
                raise sink.fail(f"{type_name(item)} at {where}.{key}[{at}], not {what}")
            yield key, item, f"{where}.{key}[{at}]"


def refuse_held(raw: dict[str, Any], parts: frozenset[str], sink: SpanSink, where: str) -> None:
    """Refuse an object that holds spans beside what its reader reads (``parts``): read
    without them, its steps would be lost."""
    held = held_trace(raw, parts)
    if held is not None:
        raise sink.fail(
            f"the object at {where} holds {held[1]} span-like object(s) under {held[0]!r} "
            "beside what its format reads, which would be lost"
        )
