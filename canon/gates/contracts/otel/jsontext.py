"""JSON text of trace files, parsed by msgspec when it is installed, else by ``json``.

msgspec (the ``canon-testing[fast]`` extra) parses a trace export about twice as fast as
the standard library, which is most of the time a trace file takes to check. What it
accepts it reads as ``json.loads`` does (integers of any size stay integers, the last of
duplicate keys wins); what it refuses (``NaN``, a lone surrogate escape, nesting too deep
for it) is parsed again by ``json``, so a file reads the same, and fails with the same
message, with or without it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from importlib.metadata import PackageNotFoundError, version


@cache  # looked up once, on the first trace parsed
def _fast_decoder() -> Callable[[str], object] | None:
    """msgspec's JSON decoder, or None when msgspec is not installed."""
    try:
        import msgspec  # optional (canon-testing[fast]), imported here only
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


def loads(text: str) -> object:
    """``json.loads(text)``: the same value or the same error, faster with msgspec."""
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
