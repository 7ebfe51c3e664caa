"""OTLP span attributes that decode on read.

A step keeps all of its span's attributes, but classification looks at a handful of keys
and contracts rarely look at the rest. So ``KVAttributes`` keeps the span's OTLP key/value
list as parsed, indexes it (key -> raw ``AnyValue``) the first time it is read, and decodes a
value each time it is read. It reads exactly like ``decode_kv_list`` of the same list:
the first of duplicate keys wins, items that are not objects or whose key is not a string
are skipped.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from operator import itemgetter
from typing import Any

from canon.gates.contracts.otel.values import decode_value

_KEY_VALUE = itemgetter("key", "value")
_MISSING = object()


def index_kv_list(items: list[Any]) -> dict[str, Any]:
    """``{key: raw AnyValue}`` of an OTLP attribute list, with ``decode_kv_list``'s rules."""
    try:
        index = dict(map(_KEY_VALUE, items))  # one C-level pass for well-formed lists
    except (TypeError, KeyError, IndexError):
        index = None
    # a shorter index means duplicate keys, where the first (not the last) must win
    if index is not None and len(index) == len(items) and all(k.__class__ is str for k in index):
        return index
    careful: dict[str, Any] = {}
    for item in items:
        if isinstance(item, dict):
            key = item.get("key")
            if isinstance(key, str) and key not in careful:
                careful[key] = item.get("value")
    return careful


class KVAttributes(Mapping[str, Any]):
    """A read-only mapping over a span's OTLP attribute list; values decode on each read."""

    __slots__ = ("_index", "_items")
    _index: dict[str, Any]

    def __init__(self, items: list[Any]) -> None:
        self._items = items

    def _lookup(self) -> dict[str, Any]:
        try:
            return self._index
        except AttributeError:
            self._index = index_kv_list(self._items)
            return self._index

    def __getitem__(self, key: str) -> Any:
        return decode_value(self._lookup()[key])

    def get(self, key: str, default: Any = None) -> Any:
        value = self._lookup().get(key, _MISSING)
        return default if value is _MISSING else decode_value(value)

    def __contains__(self, key: object) -> bool:
        return key in self._lookup()

    def __iter__(self) -> Iterator[str]:
        return iter(self._lookup())

    def __len__(self) -> int:
        return len(self._lookup())

    def subset(self, keys: frozenset[str]) -> dict[str, Any]:
        """The decoded attributes among ``keys`` that the span has."""
        index = self._lookup()
        return {key: decode_value(index[key]) for key in keys.intersection(index)}

    def decoded(self) -> dict[str, Any]:
        """A plain ``dict`` of every attribute, decoded."""
        return {key: decode_value(value) for key, value in self._lookup().items()}

    def __repr__(self) -> str:
        return f"KVAttributes({self.decoded()!r})"
