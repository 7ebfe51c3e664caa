"""Typed comparisons used by ``when:`` conditions (metadata values, tool results).

A YAML scalar or list matches by typed equality: ``true`` is not ``"true"`` and ``1`` is
not ``True``, but ``85`` equals ``85.0``; a list equals a list of the same items in
order. A mapping of operators (``gte: 70``, ``not_in: [a, b]``, ``numeric: false``)
compares instead; numeric operators also read numeric strings, because OTLP exports
carry 64-bit integers as strings. ``not_in`` and ``numeric`` never hold for an absent or
blank value: unknown is not "outside the list".

NaN and the infinities (a float, ``"NaN"`` as OTLP writes a double, ``NaN`` in a tool's
JSON) are present but are no finite number: ``numeric: false`` holds for them, and so
does every threshold (``gt``, ``gte``, ``lt``, ``lte``). A condition that holds only ever
makes a contract stricter (it applies a constraint or requires an escalation), so a
broken score must not be what lets a run skip the check.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from canon.gates.contracts.errors import ContractError

_SYMBOLS = {"eq": "==", "ne": "!=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
OPERATORS = (*_SYMBOLS, "in", "not_in", "numeric")


def same_value(left: object, right: object) -> bool:
    """Typed equality: booleans only equal booleans, numbers compare by value."""
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(same_value, left, right))
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    return left == right


def _real(value: object) -> int | float | None:
    """The number ``value`` holds or spells (NaN and infinities included), else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return value  # an int stays exact: int and float compare exactly in Python
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _number(value: object) -> int | float | None:
    """The finite number ``value`` holds or spells, else None."""
    number = _real(value)
    if number is None or (isinstance(number, float) and not math.isfinite(number)):
        return None
    return number


def _non_finite(value: object) -> bool:
    """True for NaN and the infinities, whether a float or spelled as text (``"NaN"``)."""
    number = _real(value)
    return isinstance(number, float) and not math.isfinite(number)


def _folded(value: object) -> object:
    return value.strip().casefold() if isinstance(value, str) else value


def _member(value: object, options: tuple[object, ...]) -> bool:
    folded = _folded(value)
    return any(same_value(folded, _folded(option)) for option in options)


@dataclass(frozen=True, slots=True)
class ValueTest:
    """One expected value, or a conjunction of operator tests, for a single observed value."""

    operators: tuple[tuple[str, Any], ...]

    def matches(self, value: object) -> bool:
        """True when ``value`` satisfies every operator."""
        return all(_apply(name, operand, value) for name, operand in self.operators)

    def describe(self, subject: str) -> str:
        """Render the test for a constraint name, e.g. ``metadata.risk_score>=70``."""
        parts = []
        for name, operand in self.operators:
            if name == "numeric":
                parts.append(f"{subject} is {'' if operand else 'not '}numeric")
            elif name in _SYMBOLS:
                symbol = "=" if name == "eq" and subject.startswith("metadata.") else _SYMBOLS[name]
                shown = operand if symbol == "=" else json.dumps(operand, default=str)
                parts.append(f"{subject}{symbol}{shown}")
            else:
                shown = json.dumps(list(operand), default=str)
                parts.append(f"{subject} {name.replace('_', ' ')} {shown}")
        return " AND ".join(parts)


def _apply(name: str, operand: Any, value: object) -> bool:
    if name == "eq":
        return same_value(value, operand)
    if name == "ne":
        return not same_value(value, operand)
    if name == "in":
        return _member(value, operand)
    if name in ("not_in", "numeric"):
        # An absent or blank value is unknown: not "outside the list", not "non-numeric".
        if value is None or (isinstance(value, str) and not value.strip()):
            return False
        if name == "numeric":
            return (_number(value) is not None) is operand
        return not _member(value, operand)
    if _non_finite(value):
        return True  # fail closed: NaN or an infinity cannot show a score is below a limit
    observed, bound = _number(value), _number(operand)
    if observed is None or bound is None:
        return False
    if name == "gt":
        return observed > bound
    if name == "gte":
        return observed >= bound
    if name == "lt":
        return observed < bound
    return observed <= bound


def parse_value_test(raw: object, where: str) -> ValueTest:
    """Build a ``ValueTest`` from a YAML scalar or operator mapping, strictly."""
    if not isinstance(raw, Mapping):
        # a list is matched by exact list equality, as the reference does (`in:` matches
        # any one of several values instead)
        return ValueTest((("eq", raw),))
    if not raw:
        raise ContractError(f"{where}: empty operator mapping; use one of {', '.join(OPERATORS)}")
    operators: list[tuple[str, Any]] = []
    for name, operand in raw.items():
        if name not in OPERATORS:
            raise ContractError(
                f"{where}: unknown operator {name!r}; expected one of {', '.join(OPERATORS)}"
            )
        if name in ("in", "not_in"):
            if not isinstance(operand, list) or not operand:
                raise ContractError(f"{where}.{name}: expected a non-empty list, got {operand!r}")
            operand = tuple(operand)
        elif name == "numeric" and not isinstance(operand, bool):
            raise ContractError(f"{where}.numeric: expected true or false, got {operand!r}")
        elif name in ("gt", "gte", "lt", "lte") and _number(operand) is None:
            raise ContractError(f"{where}.{name}: expected a finite number, got {operand!r}")
        operators.append((str(name), operand))
    return ValueTest(tuple(operators))
