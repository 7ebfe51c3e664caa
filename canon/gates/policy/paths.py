"""Identifier and path grammar, and path resolution through JSON objects only."""

from __future__ import annotations

import re
from typing import Any, Final

MAX_IDENTIFIER_LENGTH: Final = 128
MAX_PATH_SEGMENTS: Final = 32

_IDENTIFIER: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_PATH: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)*")


class Missing:
    """The marker for a path that does not resolve."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = Missing()


def is_identifier(text: object) -> bool:
    """True for 1-128 ASCII characters: a letter or digit, then letters, digits, '.', '_', '-'."""
    return type(text) is str and _IDENTIFIER.fullmatch(text) is not None


def is_path(text: object) -> bool:
    """True for dot-joined segments, each a letter or '_' then letters, digits, '_' or '-'."""
    return type(text) is str and _PATH.fullmatch(text) is not None


def resolve(document: Any, segments: tuple[str, ...]) -> Any:
    """The value at ``segments`` in nested objects, or ``MISSING``; arrays are never indexed."""
    node = document
    for segment in segments:
        if not isinstance(node, dict):
            return MISSING
        node = node.get(segment, MISSING)
        if node is MISSING:
            return MISSING
    return node


def blocked_at(document: Any, segments: tuple[str, ...]) -> tuple[int, Any]:
    """Where resolution stops: (index of the failing segment, the value that was not an object).

    The second item is ``MISSING`` when the key was simply absent from an object.
    Returns ``(len(segments), MISSING)`` when the path resolves.
    """
    node = document
    for index, segment in enumerate(segments):
        if not isinstance(node, dict):
            return index, node
        if segment not in node:
            return index, MISSING
        node = node[segment]
    return len(segments), MISSING
