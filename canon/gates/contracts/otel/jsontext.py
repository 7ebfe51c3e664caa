"""JSON text of trace files, parsed by msgspec when it is installed, else by ``json``.

msgspec (a dependency) parses a trace export about twice as fast as
the standard library, which is most of the time a trace file takes to check. What it
accepts it reads as ``json.loads`` does (integers of any size stay integers, the last of
duplicate keys wins); what it refuses (``NaN``, a lone surrogate escape, nesting too deep
for it) is parsed again by ``json``, so a file reads the same, and fails with the same
message, with or without it.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from typing import TypeVar

_T = TypeVar("_T")


@cache  # looked up once, on the first trace parsed
def _fast_decoder() -> Callable[[str], object] | None:
    """msgspec's JSON decoder, or None when msgspec is not installed."""
    try:
        import msgspec  # imported here only; where it cannot be imported, json parses
    except ImportError:
        return None
    decode: Callable[[str], object] = msgspec.json.Decoder().decode
    big = 2**70 + 1
    try:
        exact = decode(f"[{big}, {-big}, 0.1]") == [big, -big, 0.1]
    except ValueError:
        exact = True  # a release that refuses them leaves them to json, which is as good
    # a release that read integers past 64 bits as floats would change ids: not used
    return decode if exact else None


def msgspec_in_use() -> bool:
    """Whether msgspec parses (installed, and reading JSON as ``json`` does)."""
    return _fast_decoder() is not None


def loads(text: str) -> object:
    """``json.loads(text)``: the same value or the same error, faster with msgspec."""
    return collector_paused(_parse, text)


def collector_paused(parse: Callable[[str], _T], text: str) -> _T:
    """``parse(text)`` with the cyclic GC off, and back on after it if it was on before."""
    # A parse builds tens of thousands of containers that cannot form a cycle; with the
    # collector on, it rescans them again and again while they are built (a 2,000-span
    # trace: 29 ms to check with it on, 18 ms with it paused for the parse). Paused only
    # when it was on, so a caller that turned it off keeps it off.
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        return parse(text)
    finally:
        if paused:
            gc.enable()


def _parse(text: str) -> object:
    """msgspec's parse where it reads ``text`` as ``json`` does, else ``json``'s."""
    decode = _fast_decoder()
    if decode is not None:
        try:
            return decode(text)
        except (ValueError, RecursionError):
            pass  # JSON msgspec does not read as json does: json decides, value or error
    return json.loads(text)


def json_parser() -> str:
    """Which parser ``loads`` uses: ``"msgspec <version>"`` or ``"json (standard library)"``."""
    if _fast_decoder() is None:
        return "json (standard library)"
    try:
        return f"msgspec {version('msgspec')}"
    except PackageNotFoundError:  # importable without metadata (a vendored copy)
        return "msgspec"
