"""``validate_policy``: schema 1.0 checks in a fixed order, the first failure wins."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from canon.gates.policy.errors import INVALID_POLICY, PolicyError
from canon.gates.policy.jsonvalue import (
    MAX_CANONICAL_BYTES,
    JsonShapeError,
    canonical_text,
    copy_json,
    equality_key,
    json_type_name,
)
from canon.gates.policy.model import SCHEMA_VERSION, Policy
from canon.gates.policy.paths import MAX_PATH_SEGMENTS, is_identifier, is_path
from canon.gates.policy.rules import EQUALS, ONE_OF, RULE_KINDS, Rule

MAX_RULES: Final = 256
MAX_ONE_OF_VALUES: Final = 256

_POLICY_FIELDS: Final = frozenset({"schema_version", "policy_id", "rules"})
_RULE_BASE_FIELDS: Final = frozenset({"rule_id", "kind", "path"})
_EXTRA_FIELD: Final = {EQUALS: "value", ONE_OF: "values"}
_IDENTIFIER_RULE: Final = (
    "1-128 ASCII characters: a letter or digit, then letters, digits, '.', '_' or '-'"
)
_PATH_RULE: Final = (
    "dot-separated segments, each an ASCII letter or '_' then letters, digits, '_' or '-'"
)


def _names(names: Iterable[str]) -> str:
    return ", ".join(repr(name) for name in sorted(names))


class _RuleContext:
    """What is known about the rule under validation, for error messages and error fields."""

    def __init__(self, policy_id: str, index: int) -> None:
        self.policy_id = policy_id
        self.index = index
        self.rule_id: str | None = None

    def fail(self, problem: str, remedy: str) -> PolicyError:
        named = f"rule {self.rule_id!r} at index {self.index}" if self.rule_id else None
        where = named or f"rule at index {self.index}"
        return PolicyError(
            INVALID_POLICY,
            f"policy {self.policy_id!r}: {where} {problem}; {remedy}",
            policy_id=self.policy_id,
            rule_id=self.rule_id,
            rule_index=self.index,
        )


def _copy_whole_policy(source: Any) -> Any:
    try:
        return copy_json(source, byte_limit=MAX_CANONICAL_BYTES)
    except JsonShapeError as exc:
        raise PolicyError(
            INVALID_POLICY,
            f"policy cannot be represented within the JSON limits: {exc.problem} "
            f"at {exc.location}; use plain, finite JSON values within the limits",
        ) from None


def _check_top_level(document: Any) -> tuple[str, list[Any]]:
    if not isinstance(document, dict):
        raise PolicyError(
            INVALID_POLICY,
            f"policy must be a JSON object, got {json_type_name(document)}; "
            "wrap the rules in {schema_version, policy_id, rules}",
        )
    document = _copy_whole_policy(document)
    missing = _POLICY_FIELDS - document.keys()
    unknown = document.keys() - _POLICY_FIELDS
    if missing or unknown:
        parts = []
        if missing:
            parts.append(f"missing field(s) {_names(missing)}")
        if unknown:
            parts.append(f"unknown field(s) {_names(unknown)}")
        raise PolicyError(
            INVALID_POLICY,
            f"policy has {' and '.join(parts)}; expected exactly "
            "'policy_id', 'rules', 'schema_version'",
        )
    version = document["schema_version"]
    if type(version) is not str or version != SCHEMA_VERSION:
        raise PolicyError(
            INVALID_POLICY,
            f"policy schema_version must be the string {SCHEMA_VERSION!r}, got an unsupported "
            f'{json_type_name(version)}; set "schema_version": "{SCHEMA_VERSION}"',
        )
    policy_id = document["policy_id"]
    if not is_identifier(policy_id):
        raise PolicyError(
            INVALID_POLICY, f"policy_id must be an identifier ({_IDENTIFIER_RULE}); rename it"
        )
    rules = document["rules"]
    if not isinstance(rules, list) or not rules:
        raise PolicyError(
            INVALID_POLICY,
            f"policy {policy_id!r}: rules must be a non-empty array, got "
            f"{'an empty array' if isinstance(rules, list) else json_type_name(rules)}; "
            "declare at least one rule",
            policy_id=policy_id,
        )
    if len(rules) > MAX_RULES:
        raise PolicyError(
            INVALID_POLICY,
            f"policy {policy_id!r} declares {len(rules)} rules, the limit is {MAX_RULES}; "
            "split the policy",
            policy_id=policy_id,
        )
    return policy_id, rules


def _check_rule(raw: Any, context: _RuleContext, seen_ids: set[str]) -> Rule:
    if not isinstance(raw, dict):
        raise context.fail(f"must be a JSON object, got {json_type_name(raw)}", "fix the rule")
    if is_identifier(raw.get("rule_id")):
        context.rule_id = raw["rule_id"]
    kind = raw.get("kind")
    if type(kind) is not str or kind not in RULE_KINDS:
        if "kind" not in raw:
            got = "no kind"
        elif type(kind) is not str:
            got = f"a kind of type {json_type_name(kind)}"
        else:
            got = f"the unsupported kind {kind!r}"
        raise context.fail(
            f"has {got}; expected one of {', '.join(RULE_KINDS)}", "use a supported kind"
        )
    expected = _RULE_BASE_FIELDS | ({_EXTRA_FIELD[kind]} if kind in _EXTRA_FIELD else set())
    missing = expected - raw.keys()
    unknown = raw.keys() - expected
    if missing or unknown:
        parts = []
        if missing:
            parts.append(f"lacks field(s) {_names(missing)}")
        if unknown:
            parts.append(f"has unknown field(s) {_names(unknown)}")
        raise context.fail(
            f"({kind}) {' and '.join(parts)}",
            f"a {kind} rule has exactly {_names(expected)}",
        )
    rule_id = raw["rule_id"]
    if not is_identifier(rule_id):
        raise context.fail(f"has an invalid rule_id ({_IDENTIFIER_RULE})", "rename it")
    if rule_id in seen_ids:
        raise context.fail("repeats a rule_id used by an earlier rule", "make rule ids unique")
    seen_ids.add(rule_id)
    path = raw["path"]
    if not is_path(path):
        raise context.fail(f"has an invalid path (expected {_PATH_RULE})", "fix the path")
    if path.count(".") + 1 > MAX_PATH_SEGMENTS:
        raise context.fail(
            f"has a path of {path.count('.') + 1} segments, the limit is {MAX_PATH_SEGMENTS}",
            "shorten the path",
        )
    if kind == EQUALS:
        return Rule.build(rule_id, kind, path, value_text=canonical_text(raw["value"]))
    if kind == ONE_OF:
        return Rule.build(rule_id, kind, path, values_text=_check_values(raw["values"], context))
    return Rule.build(rule_id, kind, path)


def _check_values(values: Any, context: _RuleContext) -> tuple[str, ...]:
    if not isinstance(values, list) or not values:
        got = "an empty array" if isinstance(values, list) else json_type_name(values)
        raise context.fail(
            f"(one_of) needs a non-empty array of values, got {got}", "list the allowed values"
        )
    if len(values) > MAX_ONE_OF_VALUES:
        raise context.fail(
            f"(one_of) lists {len(values)} values, the limit is {MAX_ONE_OF_VALUES}",
            "shorten the list",
        )
    seen: dict[Any, int] = {}
    for position, item in enumerate(values):
        key = equality_key(item)
        if key in seen:
            raise context.fail(
                f"(one_of) lists the same JSON value at positions {seen[key]} and {position}",
                "remove the duplicate",
            )
        seen[key] = position
    return tuple(canonical_text(item) for item in values)


def validate_policy(source: Any) -> Policy:
    """Check a parsed policy document against schema 1.0 and compile it, or raise INVALID_POLICY."""
    if isinstance(source, Policy):
        return source
    policy_id, raw_rules = _check_top_level(source)
    seen_ids: set[str] = set()
    rules = tuple(
        _check_rule(raw, _RuleContext(policy_id, index), seen_ids)
        for index, raw in enumerate(raw_rules)
    )
    return Policy(policy_id, rules)
