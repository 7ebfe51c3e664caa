"""Strict decoding of JSON input bytes: UTF-8 only, no duplicates, finite numbers, limits."""

from __future__ import annotations

import codecs
import json
import math
from typing import Any, Final

from canon.gates.policy.errors import INVALID_JSON_INPUT, PolicyError
from canon.gates.policy.jsonvalue import JsonShapeError, check_json

MAX_INPUT_BYTES: Final = 1_000_000

_WIDE_BOMS: Final = (
    codecs.BOM_UTF32_LE,
    codecs.BOM_UTF32_BE,
    codecs.BOM_UTF16_LE,
    codecs.BOM_UTF16_BE,
)


class _DuplicateMember(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


class _NonFinite(Exception):
    def __init__(self, token: str) -> None:
        super().__init__(token)
        self.token = token


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # The decoder hands over keys after unescaping, so "a" and "\u0061" collide here.
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateMember(key)
            seen.add(key)
    return result


def _reject_constant(token: str) -> Any:
    raise _NonFinite(token)


def _finite_float(token: str) -> float:
    number = float(token)
    if not math.isfinite(number):
        raise _NonFinite(token)
    return number


def _fail(what: str, problem: str, remedy: str) -> PolicyError:
    return PolicyError(INVALID_JSON_INPUT, f"{what} {problem}; {remedy}")


def _text_of(data: bytes, what: str) -> str:
    if len(data) > MAX_INPUT_BYTES:
        raise _fail(
            what,
            f"is larger than the limit of {MAX_INPUT_BYTES} bytes",
            "shrink the input",
        )
    if data.startswith(codecs.BOM_UTF8):
        raise _fail(
            what,
            "starts with a UTF-8 byte order mark, which JSON does not allow",
            "save the file as UTF-8 without a BOM",
        )
    if data.startswith(_WIDE_BOMS) or (len(data) >= 2 and b"\x00" in data[:4]):
        raise _fail(
            what, "looks like UTF-16 or UTF-32 text, expected UTF-8", "re-encode it as UTF-8"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(
            what, f"is not valid UTF-8 (byte offset {exc.start})", "re-encode it as UTF-8"
        ) from None


def decode_json_bytes(data: bytes, *, what: str = "input") -> Any:
    """Decode one JSON document from UTF-8 bytes, refusing anything not strictly JSON."""
    text = _text_of(data, what)
    try:
        value = json.loads(
            text,
            object_pairs_hook=_unique_members,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
        )
    except _DuplicateMember as dup:
        raise _fail(
            what,
            f"has a duplicate object member {json.dumps(dup.key, ensure_ascii=True)}",
            "keep one member per name",
        ) from None
    except _NonFinite as bad:
        raise _fail(
            what,
            f"contains the non-finite number {bad.token[:40]}",
            "use finite JSON numbers only",
        ) from None
    except RecursionError:
        raise _fail(
            what, "exceeds the structural limits (nesting is far too deep)", "flatten it"
        ) from None
    except json.JSONDecodeError as exc:
        raise _fail(
            what,
            f"is not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
            "fix the syntax",
        ) from None
    except ValueError as exc:  # e.g. integer literals beyond CPython's digit limit
        raise _fail(what, f"is not valid JSON: {exc}", "fix the syntax") from None
    try:
        check_json(value)
    except JsonShapeError as exc:
        if "surrogate" in exc.problem:
            raise _fail(
                what,
                f"is not valid JSON: {exc.problem} at {exc.location}",
                "escape only complete surrogate pairs",
            ) from None
        raise _fail(
            what,
            f"exceeds the structural limits: {exc.problem} at {exc.location}",
            "reduce nesting or size",
        ) from None
    return value


def decode_json_text(text: str, *, what: str = "input") -> Any:
    """Decode one JSON document from a string with the same strictness as the byte decoder."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        raise _fail(what, "contains a lone surrogate", "pass valid Unicode text") from None
    return decode_json_bytes(data, what=what)
