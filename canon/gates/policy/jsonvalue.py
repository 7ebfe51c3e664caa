"""JSON values in memory: structural limits, defensive copies, canonical text and equality."""

from __future__ import annotations

import json
import math
from typing import Any, Final

MAX_DEPTH: Final = 32
MAX_NODES: Final = 100_000
MAX_CANONICAL_BYTES: Final = 1_000_000

# CPython refuses to print integers longer than this many digits, so no canonical form exists.
_MAX_INT_DIGITS: Final = 4300
_BIG_INT_BITS: Final = 14_000
# Upper bound on the canonical bytes one node adds besides its string characters:
# the longest float repr (24) plus quotes, colon and comma.
_NODE_BYTES_BOUND: Final = 32
# A character costs at most six bytes in canonical text (a \uXXXX escape).
_CHAR_BYTES_BOUND: Final = 6


class JsonShapeError(ValueError):
    """A value breaks a JSON structural rule; ``location`` says where (``$`` is the top)."""

    def __init__(self, problem: str, location: str = "$") -> None:
        super().__init__(f"{problem} at {location}")
        self.problem = problem
        self.location = location


class _Fault(Exception):
    """Internal: carries a problem up the recursion while the location is assembled."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.trail: list[str] = []


def canonical_text(value: Any) -> str:
    """Key-sorted, compact, non-ASCII-preserving JSON text of an already checked value."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def canonical_size(value: Any) -> int:
    """UTF-8 byte length of the canonical text of an already checked value."""
    return len(canonical_text(value).encode("utf-8"))


def _has_lone_surrogate(text: str) -> bool:
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _int_problem(value: int) -> str | None:
    if value.bit_length() <= _BIG_INT_BITS:
        return None
    try:
        digits = len(str(abs(value)))
    except ValueError:
        return f"integer with more than {_MAX_INT_DIGITS} digits"
    return None if digits <= _MAX_INT_DIGITS else f"integer with more than {_MAX_INT_DIGITS} digits"


def _location(trail: list[str]) -> str:
    return "$" + "".join(reversed(trail))


class _Walker:
    """One pass over a value: type checks, depth, node count, size bound, optional copy."""

    __slots__ = ("chars", "copy", "nodes")

    def __init__(self, copy: bool) -> None:
        self.copy = copy
        self.nodes = 0
        self.chars = 0

    def walk(self, value: Any, depth: int) -> Any:
        kind = type(value)
        self.nodes += 1
        if kind is str:
            self.chars += len(value)
            if _has_lone_surrogate(value):
                raise _Fault("string with a lone surrogate")
            return value
        if kind is dict:
            return self._object(value, depth + 1)
        if kind is list:
            return self._array(value, depth + 1)
        if kind is bool or value is None:
            return value
        if kind is int:
            problem = _int_problem(value)
            if problem:
                raise _Fault(problem)
            return value
        if kind is float:
            if not math.isfinite(value):
                raise _Fault("non-finite number")
            return value
        return self._subclass(value, depth)

    def _subclass(self, value: Any, depth: int) -> Any:
        # Subclasses of the JSON types are accepted and copied as the plain type.
        self.nodes -= 1
        if isinstance(value, str):
            return self.walk(str.__str__(value), depth)
        if isinstance(value, int):
            return self.walk(int(value), depth)
        if isinstance(value, float):
            return self.walk(float(value), depth)
        if isinstance(value, dict):
            self.nodes += 1
            return self._object(value, depth + 1)
        if isinstance(value, list):
            self.nodes += 1
            return self._array(value, depth + 1)
        self.nodes += 1
        raise _Fault(f"{type(value).__name__} is not a JSON value")

    def _enter(self, depth: int, size: int) -> None:
        if depth > MAX_DEPTH:
            raise _Fault(f"nesting deeper than {MAX_DEPTH} containers")
        if self.nodes + size > MAX_NODES:
            raise _Fault(f"more than {MAX_NODES} values")

    def _object(self, value: dict[Any, Any], depth: int) -> Any:
        self._enter(depth, len(value))
        out: dict[str, Any] | None = {} if self.copy else None
        for key, item in value.items():
            if type(key) is not str:
                if not isinstance(key, str):
                    raise _Fault(f"object key of type {type(key).__name__} (keys must be strings)")
                key = str.__str__(key)
            self.chars += len(key)
            if _has_lone_surrogate(key):
                raise _Fault("object key with a lone surrogate")
            try:
                copied = self.walk(item, depth)
            except _Fault as fault:
                fault.trail.append(f"[{json.dumps(key, ensure_ascii=True)}]")
                raise
            if out is not None:
                out[key] = copied
        return out

    def _array(self, value: list[Any], depth: int) -> Any:
        self._enter(depth, len(value))
        out: list[Any] | None = [] if self.copy else None
        for index, item in enumerate(value):
            try:
                copied = self.walk(item, depth)
            except _Fault as fault:
                fault.trail.append(f"[{index}]")
                raise
            if out is not None:
                out.append(copied)
        return out

    def size_may_exceed(self, limit: int) -> bool:
        return self.nodes * _NODE_BYTES_BOUND + self.chars * _CHAR_BYTES_BOUND > limit


def _run(value: Any, copy: bool, byte_limit: int | None) -> Any:
    walker = _Walker(copy)
    try:
        result = walker.walk(value, 0)
    except _Fault as fault:
        raise JsonShapeError(fault.problem, _location(fault.trail)) from None
    except RecursionError:
        raise JsonShapeError(f"nesting deeper than {MAX_DEPTH} containers") from None
    if walker.nodes > MAX_NODES:
        raise JsonShapeError(f"more than {MAX_NODES} values")
    if byte_limit is not None and walker.size_may_exceed(byte_limit):
        size = canonical_size(value if not copy else result)
        if size > byte_limit:
            raise JsonShapeError(f"canonical JSON of {size} bytes (limit {byte_limit})")
    return result


def _fast_check(root: Any) -> tuple[int, int] | None:
    """Quick pass over plain types: (nodes, string characters), or None to look closer.

    Level by level rather than recursive: a call per container dominated the evaluation
    benchmark, and the level number is the depth without storing it per container.
    """
    level: list[Any] = [root]
    depth = 1
    nodes = 1
    chars = 0
    while level:
        if depth > MAX_DEPTH:
            return None
        below: list[Any] = []
        add = below.append
        for value in level:
            if type(value) is dict:
                try:
                    keys = "".join(value)
                except TypeError:
                    return None
                if not keys.isascii() and _has_lone_surrogate(keys):
                    return None
                chars += len(keys)
                items: Any = value.values()
            else:
                items = value
            nodes += len(items)
            if nodes > MAX_NODES:
                return None
            for item in items:
                kind = type(item)
                if kind is str:
                    if not item.isascii() and _has_lone_surrogate(item):
                        return None
                    chars += len(item)
                elif kind is dict or kind is list:
                    add(item)
                elif kind is bool or item is None:
                    continue
                elif kind is int:
                    if item.bit_length() > 64:
                        return None
                elif kind is float:
                    if item - item != 0.0:  # inf - inf and nan - nan are nan
                        return None
                else:
                    return None
        level = below
        depth += 1
    return nodes, chars


def check_json(value: Any, *, byte_limit: int | None = None) -> None:
    """Raise ``JsonShapeError`` unless ``value`` is JSON within the depth, node and byte limits."""
    kind = type(value)
    if kind is dict or kind is list:
        tally = _fast_check(value)
        if tally is not None and (
            byte_limit is None
            or tally[0] * _NODE_BYTES_BOUND + tally[1] * _CHAR_BYTES_BOUND <= byte_limit
        ):
            return
    _run(value, False, byte_limit)


def copy_json(value: Any, *, byte_limit: int | None = None) -> Any:
    """A fresh, unaliased copy of ``value`` made of plain JSON types, after ``check_json``."""
    return _run(value, True, byte_limit)


def equality_key(value: Any) -> Any:
    """A hashable key that two checked JSON values share exactly when canonically equal."""
    kind = type(value)
    if kind is str or value is None:
        return value
    if kind is bool:
        return (_BOOL, value)
    if kind is int:
        return (_INT, value)
    if kind is float:
        return (_FLOAT, repr(value))
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return (_INT, int(value))
    if isinstance(value, float):
        return (_FLOAT, repr(float(value)))
    return (_CONTAINER, canonical_text(value))


_BOOL: Final = "b"
_INT: Final = "i"
_FLOAT: Final = "f"
_CONTAINER: Final = "c"


def json_type_name(value: Any) -> str:
    """The JSON name of a value's type (object, array, string, number, boolean, null)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return type(value).__name__
