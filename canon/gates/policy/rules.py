"""Rule kinds, reason codes, one compiled rule, and the result of checking it."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from canon.gates.policy.jsonvalue import equality_key
from canon.gates.policy.paths import MISSING

REQUIRED_FIELD: Final = "required_field"
EQUALS: Final = "equals"
ONE_OF: Final = "one_of"
FALSE: Final = "false"
EMPTY_LIST: Final = "empty_list"
RULE_KINDS: Final = (REQUIRED_FIELD, EQUALS, ONE_OF, FALSE, EMPTY_LIST)

RULE_SATISFIED: Final = "RULE_SATISFIED"
FIELD_MISSING: Final = "FIELD_MISSING"
VALUE_NOT_EQUAL: Final = "VALUE_NOT_EQUAL"
VALUE_NOT_ALLOWED: Final = "VALUE_NOT_ALLOWED"
VALUE_NOT_FALSE: Final = "VALUE_NOT_FALSE"
VALUE_NOT_EMPTY_LIST: Final = "VALUE_NOT_EMPTY_LIST"
REASON_CODES: Final = (
    RULE_SATISFIED,
    FIELD_MISSING,
    VALUE_NOT_EQUAL,
    VALUE_NOT_ALLOWED,
    VALUE_NOT_FALSE,
    VALUE_NOT_EMPTY_LIST,
)

# The reason a resolved value fails each kind; required_field can only fail as missing.
FAILURE_REASON: Final = {
    REQUIRED_FIELD: FIELD_MISSING,
    EQUALS: VALUE_NOT_EQUAL,
    ONE_OF: VALUE_NOT_ALLOWED,
    FALSE: VALUE_NOT_FALSE,
    EMPTY_LIST: VALUE_NOT_EMPTY_LIST,
}


@dataclass(frozen=True, slots=True)
class RuleResult:
    """The outcome of one rule: identity, pass state and a stable reason code (no values)."""

    rule_id: str
    kind: str
    path: str
    passed: bool
    reason_code: str

    def to_json(self) -> dict[str, Any]:
        """The result as a JSON object."""
        return {
            "kind": self.kind,
            "passed": self.passed,
            "path": self.path,
            "reason_code": self.reason_code,
            "rule_id": self.rule_id,
        }


def _unbuilt(response: Any) -> RuleResult:
    raise TypeError("construct rules with Rule.build")


def _acceptor(kind: str, key: Any, keys: frozenset[Any]) -> Callable[[Any], bool]:
    if kind == EQUALS:
        if type(key) is str:
            # Plain strings are their own equality key: skip the general function.
            return lambda value: value == key and (type(value) is str or equality_key(value) == key)
        return lambda value: bool(equality_key(value) == key)
    if kind == ONE_OF:
        return lambda value: (value if type(value) is str else equality_key(value)) in keys
    if kind == FALSE:
        return lambda value: value is False
    if kind == EMPTY_LIST:
        return lambda value: isinstance(value, list) and not value
    return lambda value: True


def _make_checker(
    kind: str,
    segments: tuple[str, ...],
    accept: Callable[[Any], bool],
    satisfied: RuleResult,
    missing: RuleResult,
    failed: RuleResult,
) -> Callable[[Any], RuleResult]:
    # Results depend only on (rule, pass, reason), so they are built once here and shared:
    # evaluation then allocates nothing per rule. The common kinds are inlined because
    # a second call per rule showed up in the benchmark.
    if kind == REQUIRED_FIELD:

        def check(response: Any) -> RuleResult:
            node = response
            for segment in segments:
                if not isinstance(node, dict):
                    return missing
                node = node.get(segment, MISSING)
                if node is MISSING:
                    return missing
            return satisfied

    elif kind == FALSE:

        def check(response: Any) -> RuleResult:
            node = response
            for segment in segments:
                if not isinstance(node, dict):
                    return missing
                node = node.get(segment, MISSING)
                if node is MISSING:
                    return missing
            return satisfied if node is False else failed

    else:

        def check(response: Any) -> RuleResult:
            node = response
            for segment in segments:
                if not isinstance(node, dict):
                    return missing
                node = node.get(segment, MISSING)
                if node is MISSING:
                    return missing
            return satisfied if accept(node) else failed

    return check


@dataclass(frozen=True, slots=True)
class Rule:
    """One validated rule; expected values are held as canonical text so nobody can mutate them."""

    rule_id: str
    kind: str
    path: str
    segments: tuple[str, ...]
    value_text: str | None = None
    values_text: tuple[str, ...] | None = None
    _key: Any = field(default=None, repr=False, compare=False)
    _keys: frozenset[Any] = field(default=frozenset(), repr=False, compare=False)
    check: Callable[[Any], RuleResult] = field(default=_unbuilt, repr=False, compare=False)

    @classmethod
    def build(
        cls,
        rule_id: str,
        kind: str,
        path: str,
        value_text: str | None = None,
        values_text: tuple[str, ...] | None = None,
    ) -> Rule:
        """Compile a rule whose fields were already validated."""
        key = equality_key(json.loads(value_text)) if value_text is not None else None
        keys = frozenset(equality_key(json.loads(text)) for text in values_text or ())
        segments = tuple(path.split("."))
        checker = _make_checker(
            kind,
            segments,
            _acceptor(kind, key, keys),
            RuleResult(rule_id, kind, path, True, RULE_SATISFIED),
            RuleResult(rule_id, kind, path, False, FIELD_MISSING),
            RuleResult(rule_id, kind, path, False, FAILURE_REASON[kind]),
        )
        return cls(rule_id, kind, path, segments, value_text, values_text, key, keys, checker)

    @property
    def value(self) -> Any:
        """A fresh copy of the ``equals`` value (``None`` for other kinds)."""
        return None if self.value_text is None else json.loads(self.value_text)

    @property
    def values(self) -> list[Any] | None:
        """A fresh copy of the ``one_of`` values (``None`` for other kinds)."""
        if self.values_text is None:
            return None
        return [json.loads(text) for text in self.values_text]

    def evaluate(self, response: Any) -> RuleResult:
        """Check this rule against a checked response object."""
        return self.check(response)

    def to_json(self) -> dict[str, Any]:
        """The rule in normalised policy form."""
        body: dict[str, Any] = {"kind": self.kind, "path": self.path, "rule_id": self.rule_id}
        if self.value_text is not None:
            body["value"] = json.loads(self.value_text)
        if self.values_text is not None:
            body["values"] = [json.loads(text) for text in self.values_text]
        return body
