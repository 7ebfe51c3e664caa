"""Typed comparisons used by ``when:`` conditions (metadata values, tool results).

A YAML scalar or list matches by typed equality: ``true`` is not ``"true"`` and ``1`` is
not ``True``, but ``85`` equals ``85.0``; a list equals a list of the same items in
order. A mapping of operators (``gte: 70``, ``not_in: [a, b]``, ``numeric: false``)
compares instead; numeric operators also read numeric strings, because OTLP exports
carry 64-bit integers as strings. ``not_in`` and ``numeric`` never hold for an absent or
blank value: unknown is not "outside the list".
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


def _number(value: object) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return None if math.isnan(number) else number
    return None


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
            raise ContractError(f"{where}.{name}: expected a number, got {operand!r}")
        operators.append((str(name), operand))
    return ValueTest(tuple(operators))
