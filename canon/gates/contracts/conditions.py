"""Conditions that gate a constraint (``when:``) or trigger an escalation rule.

A YAML condition is a mapping whose keys all have to hold (logical AND):
``metadata``, ``input_matches``, ``step_present``, ``tool_result_matches``, and
``any_of`` (a list of such mappings of which one has to hold).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from canon.gates.contracts.errors import ContractError
from canon.gates.contracts.execution import Execution
from canon.gates.contracts.facts import Facts
from canon.gates.contracts.otel.classify import step_name_for
from canon.gates.contracts.values import ValueTest, parse_value_test

CONDITION_KEYS = ("metadata", "input_matches", "step_present", "tool_result_matches", "any_of")


class Condition(Protocol):
    """Something that holds or not for one execution."""

    @property
    def description(self) -> str:
        """Human-readable form, used in constraint names."""
        ...

    def holds(self, facts: Facts) -> bool:
        """True when the condition is met by the execution behind ``facts``."""
        ...


@dataclass(frozen=True, slots=True)
class MetadataMatches:
    """Every listed metadata key has a value passing its test."""

    tests: tuple[tuple[str, ValueTest], ...]

    @property
    def description(self) -> str:
        return " AND ".join(test.describe(f"metadata.{key}") for key, test in self.tests)

    def holds(self, facts: Facts) -> bool:
        metadata = facts.execution.metadata
        return all(test.matches(metadata.get(key)) for key, test in self.tests)


@dataclass(frozen=True, slots=True)
class InputMatches:
    """The request text matches a regular expression (case-insensitive search)."""

    pattern: re.Pattern[str]

    @property
    def description(self) -> str:
        return f"input matches /{self.pattern.pattern}/"

    def holds(self, facts: Facts) -> bool:
        return self.pattern.search(facts.execution.input_text or "") is not None


@dataclass(frozen=True, slots=True)
class StepPresent:
    """At least one of the named steps appears in the execution (errored or not)."""

    names: tuple[str, ...]

    @property
    def description(self) -> str:
        return f"step present: {list(self.names)!r}"

    def holds(self, facts: Facts) -> bool:
        return any(facts.present(name) for name in self.names)


def _result_mapping(outputs: object) -> Mapping[str, Any] | None:
    if isinstance(outputs, Mapping):
        return outputs
    if isinstance(outputs, str) and outputs.lstrip().startswith("{"):
        try:
            parsed = json.loads(outputs)
        except ValueError:
            return None
        return parsed if isinstance(parsed, dict) else None
    return None


@dataclass(frozen=True, slots=True)
class ToolResultMatches:
    """Some step named ``tool`` (any step when ``tool`` is None) returned ``key`` passing a test."""

    tool: str | None
    key: str
    test: ValueTest

    @property
    def description(self) -> str:
        return self.test.describe(f"{self.tool or '*'}.{self.key}")

    def holds(self, facts: Facts) -> bool:
        steps = facts.execution.steps if self.tool is None else facts.columns.named(self.tool)
        for step in steps:
            result = _result_mapping(step.outputs)
            if result is not None and self.key in result and self.test.matches(result[self.key]):
                return True
        return False


@dataclass(frozen=True, slots=True)
class AllOf:
    """Every part holds."""

    parts: tuple[Condition, ...]

    @property
    def description(self) -> str:
        return " AND ".join(part.description for part in self.parts)

    def holds(self, facts: Facts) -> bool:
        return all(part.holds(facts) for part in self.parts)


@dataclass(frozen=True, slots=True)
class AnyOf:
    """At least one part holds."""

    parts: tuple[Condition, ...]

    @property
    def description(self) -> str:
        return "(" + " OR ".join(part.description for part in self.parts) + ")"

    def holds(self, facts: Facts) -> bool:
        return any(part.holds(facts) for part in self.parts)


@dataclass(frozen=True, slots=True)
class CallableCondition:
    """A Python predicate over the execution (Python API only)."""

    predicate: Callable[[Execution], bool]
    description: str = "custom condition"

    def holds(self, facts: Facts) -> bool:
        return bool(self.predicate(facts.execution))


def _string_list(raw: object, where: str) -> tuple[str, ...]:
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list) or not items:
        raise ContractError(f"{where}: expected a step name or a non-empty list, got {raw!r}")
    if not all(isinstance(item, str) and item for item in items):
        raise ContractError(f"{where}: every entry must be a non-empty string, got {raw!r}")
    return tuple(step_name_for(item) for item in items)


def _tool_result(raw: object, where: str) -> ToolResultMatches:
    if not isinstance(raw, Mapping):
        raise ContractError(f"{where}: expected a mapping with tool, key, value; got {raw!r}")
    unknown = sorted(set(raw) - {"tool", "key", "value"})
    if unknown:
        raise ContractError(f"{where}: unknown key {unknown[0]!r}; allowed: tool, key, value")
    missing = [name for name in ("key", "value") if name not in raw]
    if missing:
        raise ContractError(
            f"{where}: missing {missing[0]!r} (tool is optional; key, value are not)"
        )
    tool, key = raw.get("tool"), raw["key"]
    if tool is not None and (not isinstance(tool, str) or not tool):
        raise ContractError(f"{where}.tool: expected a tool name, got {tool!r}")
    if not isinstance(key, str) or not key:
        raise ContractError(f"{where}.key: expected a result key, got {key!r}")
    if tool is not None:
        tool = step_name_for(tool)
    return ToolResultMatches(tool, key, parse_value_test(raw["value"], f"{where}.value"))


def parse_condition(raw: object, where: str) -> Condition:
    """Build a condition from a YAML mapping, naming ``where`` in every error."""
    if not isinstance(raw, Mapping) or not raw:
        raise ContractError(
            f"{where}: expected a non-empty mapping with keys among {', '.join(CONDITION_KEYS)}; "
            f"got {raw!r}"
        )
    unknown = sorted(str(key) for key in raw if key not in CONDITION_KEYS)
    if unknown:
        raise ContractError(
            f"{where}: unknown condition {unknown[0]!r}; "
            f"expected one of {', '.join(CONDITION_KEYS)}"
        )
    # Parts are built in a fixed order so names do not depend on YAML key order.
    parts: list[Condition] = []
    if "metadata" in raw:
        metadata = raw["metadata"]
        if not isinstance(metadata, Mapping) or not metadata:
            raise ContractError(f"{where}.metadata: expected a non-empty mapping, got {metadata!r}")
        parts.append(
            MetadataMatches(
                tuple(
                    (str(key), parse_value_test(value, f"{where}.metadata.{key}"))
                    for key, value in metadata.items()
                )
            )
        )
    if "input_matches" in raw:
        pattern = raw["input_matches"]
        if not isinstance(pattern, str) or not pattern:
            raise ContractError(f"{where}.input_matches: expected a regex string, got {pattern!r}")
        try:
            parts.append(InputMatches(re.compile(pattern, re.IGNORECASE)))
        except re.error as exc:
            raise ContractError(
                f"{where}.input_matches: invalid regular expression {pattern!r}: {exc}"
            ) from None
    if "step_present" in raw:
        parts.append(StepPresent(_string_list(raw["step_present"], f"{where}.step_present")))
    if "tool_result_matches" in raw:
        parts.append(_tool_result(raw["tool_result_matches"], f"{where}.tool_result_matches"))
    if "any_of" in raw:
        options = raw["any_of"]
        if not isinstance(options, list) or len(options) < 2:
            raise ContractError(f"{where}.any_of: expected a list of two or more conditions")
        parts.append(
            AnyOf(
                tuple(
                    parse_condition(item, f"{where}.any_of[{i}]") for i, item in enumerate(options)
                )
            )
        )
    return parts[0] if len(parts) == 1 else AllOf(tuple(parts))


def condition_from(raw: object, description: str = "") -> Condition:
    """Accept a Python condition: a callable, a metadata dict, or a ``Condition``."""
    if isinstance(raw, Mapping):
        tests = tuple((str(key), ValueTest((("eq", value),))) for key, value in raw.items())
        if not tests:
            raise ContractError("when(): the metadata condition is empty; give at least one pair")
        metadata = MetadataMatches(tests)
        if description:
            return _Described(metadata, description)
        return _Described(metadata, " AND ".join(f"{k}={v}" for k, v in raw.items()))
    if hasattr(raw, "holds") and hasattr(raw, "description"):
        return _Described(raw, description) if description else raw
    if callable(raw):
        return CallableCondition(raw, description or "custom condition")
    raise ContractError(
        f"when(): expected a callable, a metadata dict or a Condition, got {type(raw).__name__}"
    )


@dataclass(frozen=True, slots=True)
class _Described:
    """A condition shown under a caller-chosen description."""

    inner: Condition
    description: str

    def holds(self, facts: Facts) -> bool:
        return self.inner.holds(facts)
