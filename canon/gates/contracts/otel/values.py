"""Decoding of the field values trace exporters write: attributes, ids, times, status codes.

Every decoder is total: an odd-typed input yields a neutral value (``None``, ``""``, ``0``,
``"unset"``) instead of raising, so one malformed field never loses the whole trace.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Any

from canon.gates.contracts.execution import StepStatus
from canon.gates.contracts.otel.rawspan import RawEvent

_ZERO_IDS = frozenset({"", "0", "0000000000000000", "00000000000000000000000000000000"})
_HEX_DIGITS = frozenset("0123456789abcdef")
_BASE64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
# padded base64 length -> decoded byte length: span ids (8 bytes) and trace ids (16); the
# padding is what tells base64 apart from an id that merely is not hex ("adot-tool-1")
_BASE64_WIDTHS = {12: 8, 24: 16}

# JSON text starts with one of these once leading blanks are gone; anything else is prose.
_JSON_STARTS = frozenset('{["-0123456789tfn')


# stringValue, then intValue: the two decode_kv_list looks for before anything else
_TAG_PRECEDENCE = (
    "stringValue",
    "intValue",
    "doubleValue",
    "boolValue",
    "bytesValue",
    "arrayValue",
    "kvlistValue",
)


def decode_any_value(value: object) -> Any:
    """Decode one OTLP ``AnyValue`` object (``{"stringValue": ...}`` etc.) to a Python value."""
    if not isinstance(value, dict):
        return value
    if len(value) > 1:
        # OTLP allows one tag; of several, the same one wins whatever order they are in
        tag = next((tag for tag in _TAG_PRECEDENCE if tag in value), next(iter(value)))
        value = {tag: value[tag]}
    for tag, raw in value.items():
        if tag == "stringValue":
            return raw
        if tag == "intValue":
            # protobuf JSON writes int64 as a string; a bad one stays as written.
            return _to_int(raw)
        if tag == "arrayValue":
            items = raw.get("values") if isinstance(raw, dict) else None
            return [decode_any_value(item) for item in items] if isinstance(items, list) else []
        if tag == "kvlistValue":
            items = raw.get("values") if isinstance(raw, dict) else None
            return decode_kv_list(items)
        if tag == "doubleValue":
            return _to_float(raw)
        return raw  # boolValue, bytesValue (base64 text) and unknown tags keep their value
    return None


def decode_value(value: object) -> Any:
    """Decode one attribute's value exactly as ``decode_kv_list`` does (``stringValue`` first)."""
    if isinstance(value, dict) and "stringValue" in value:
        return value["stringValue"]
    return decode_any_value(value)


def decode_kv_list(items: object) -> dict[str, Any]:
    """Decode OTLP attributes: a list of ``{"key", "value"}`` items, or a plain mapping.

    Of duplicate keys (which OTLP forbids) the first wins, as in the OpenTelemetry
    Collector's attribute maps.
    """
    if isinstance(items, dict):
        return items
    out: dict[str, Any] = {}
    if not isinstance(items, list):
        return out
    try:
        # fast path for well-formed lists; anything odd falls through to the careful loop
        for item in items:
            value = item["value"]
            key = item["key"]
            if key.__class__ is not str:
                break
            if key in out:
                continue  # of duplicate keys the first wins, as in the OTel Collector
            if "stringValue" in value:
                out[key] = value["stringValue"]
            elif "intValue" in value and value["intValue"].__class__ is str:
                out[key] = int(value["intValue"])
            else:
                out[key] = decode_any_value(value)
        else:
            return out
    except (TypeError, KeyError, AttributeError, ValueError):
        pass
    out = {}
    for item in items:
        if not isinstance(item, dict):
            continue
        key = item.get("key")
        if not isinstance(key, str) or key in out:
            continue
        value = item.get("value")
        # Fast path: most attributes are strings.
        if isinstance(value, dict) and "stringValue" in value:
            out[key] = value["stringValue"]
        else:
            out[key] = decode_any_value(value)
    return out


def decode_jaeger_tags(tags: object) -> dict[str, Any]:
    """Decode Jaeger ``tags``/``fields`` (``{"key", "type", "value"}`` items) to a mapping."""
    out: dict[str, Any] = {}
    if not isinstance(tags, list):
        return out
    for tag in tags:
        if not isinstance(tag, dict):
            continue
        key = tag.get("key")
        if not isinstance(key, str) or key in out:
            continue  # of duplicate keys the first wins, as for OTLP attributes
        value = tag.get("value")
        kind = tag.get("type")
        if kind == "int64":
            value = _to_int(value)
        elif kind == "float64":
            value = _to_float(value)
        elif kind == "bool" and isinstance(value, str):
            value = value.lower() == "true"
        out[key] = value
    return out


def _to_int(raw: object) -> Any:
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str):
        try:
            return int(raw)
        except ValueError:
            return raw
    return raw


def _to_float(raw: object) -> Any:
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return float(raw)
    if isinstance(raw, str):
        try:
            return float(raw)  # protobuf JSON also writes "NaN", "Infinity"
        except ValueError:
            return raw
    return raw


def normalize_id(raw: object, width: int = 16) -> str:
    """Render a trace or span id as lower-case hex; integers are padded to ``width`` digits.

    Base64 ids (Tempo, OTLP protobuf JSON) are decoded to hex, so the id matches what
    Tempo, Jaeger and the agent's own logs show; an id that is neither stays as written,
    lower-cased.
    """
    if raw.__class__ is str:
        # fast path: OTLP and Jaeger ids are already lower-case hex without a prefix
        if raw in _ZERO_IDS:
            return ""
        if raw.isalnum() and (raw.islower() or raw.isdigit()):
            if raw[:2] != "0x":
                return raw
            if raw.isascii():  # the OTel Python SDK's "0x..." hex: the same as below
                digits = raw[2:]
                return digits if digits.strip("0") else ""
    if isinstance(raw, bool) or raw is None:
        return ""
    if isinstance(raw, int):
        return format(raw, f"0{width}x") if raw > 0 else ""
    if not isinstance(raw, str):
        return ""
    text = raw.strip()
    if not _HEX_DIGITS.issuperset(text.lower()):
        decoded = _base64_hex(text)
        if decoded is not None:
            text = decoded
    text = text.lower()
    if text.startswith("0x"):
        text = text[2:]
    return "" if text in _ZERO_IDS or not text.strip("0") else text


def _base64_hex(text: str) -> str | None:
    """Hex of a base64 trace id (16 bytes) or span id (8 bytes); ``None`` if it is not one."""
    size = _BASE64_WIDTHS.get(len(text))
    if size is None or not text.endswith("=") or not _BASE64_CHARS.issuperset(text):
        return None
    try:
        data = base64.b64decode(text, validate=True)
    except (ValueError, binascii.Error):
        return None
    return data.hex() if len(data) == size else None


def to_nanos(raw: object) -> int:
    """Read a timestamp as Unix nanoseconds: numbers of any unit, digit strings, ISO 8601."""
    # fast path: OTLP nanoseconds as a string ("²" is a digit to isdigit, not to int)
    if raw.__class__ is str:
        if raw.isascii() and raw.isdigit():
            number = int(raw)
            return number if number >= 100_000_000_000_000_000 else _scale(number)
        if raw[4:5] == "-" and raw[:4].isdigit():
            return _iso_nanos(raw.strip())  # an ISO 8601 date: read as below, sooner
    if isinstance(raw, bool):
        return 0
    if isinstance(raw, str):
        text = raw.strip()
        if not text:
            return 0
        if text.isascii() and text.isdigit():
            return _scale(int(text))
        if text[4:5] == "-" and text[:4].isdigit():
            return _iso_nanos(text)  # a date: no number, so no failed float() first
        try:
            return _scale(float(text))
        except ValueError:
            return _iso_nanos(text)
    if isinstance(raw, (int, float)):
        return _scale(raw)
    if isinstance(raw, list) and len(raw) == 2:
        # a JS SDK HrTime: [seconds, nanoseconds]
        seconds, nanos = raw
        if seconds.__class__ is int and nanos.__class__ is int and seconds > 0 <= nanos:
            return seconds * 1_000_000_000 + nanos
    return 0


def _scale(number: float) -> int:
    # Pick the unit from the magnitude: seconds, ms, µs (Jaeger) and ns (OTLP) since 1973.
    if number != number or number <= 0 or number == float("inf"):  # NaN, negative, infinite
        return 0
    if number < 1e11:
        return int(number * 1_000_000_000)
    if number < 1e14:
        return int(number * 1_000_000)
    if number < 1e17:
        return int(number * 1_000)
    return int(number)


def _iso_nanos(text: str) -> int:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return 0
    if moment.tzinfo is None:
        return 0 if moment.year < 1970 else int(moment.timestamp() * 1e9)  # naive = local
    return int(moment.timestamp() * 1_000_000) * 1000


_STATUS_WORDS: dict[str, StepStatus] = {
    "0": "unset",
    "1": "ok",
    "2": "error",
    "unset": "unset",
    "ok": "ok",
    "error": "error",
    "status_code_unset": "unset",
    "status_code_ok": "ok",
    "status_code_error": "error",
}


_INT_STATUS: dict[int, StepStatus] = {0: "unset", 1: "ok", 2: "error"}


def decode_status(raw: object) -> StepStatus:
    """Read a span status (``{"code": 2}``, ``"STATUS_CODE_ERROR"``, ``"error"``, ...)."""
    if raw.__class__ is dict:
        code = raw.get("code")
        if code.__class__ is int:
            return _INT_STATUS.get(code, "unset")
        raw = raw.get("status_code") if code is None else code
    if isinstance(raw, bool):
        return "unset"
    if isinstance(raw, int):
        return "error" if raw == 2 else "ok" if raw == 1 else "unset"
    if isinstance(raw, str):
        return _STATUS_WORDS.get(raw.strip().lower(), "unset")
    return "unset"


def parse_json_text(value: object) -> Any:
    """Parse ``value`` as JSON when it is a string holding JSON; otherwise return it unchanged."""
    if not isinstance(value, str):
        return value
    text = value.lstrip()
    if not text or text[0] not in _JSON_STARTS:
        return value
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return value


def otlp_events(events: object) -> tuple[RawEvent, ...]:
    """Decode a span's OTLP ``events`` list."""
    if not isinstance(events, list):
        return ()
    return tuple(
        RawEvent(
            name if isinstance(name := event.get("name"), str) else "",
            decode_kv_list(event.get("attributes")),
        )
        for event in events
        if isinstance(event, dict)
    )
