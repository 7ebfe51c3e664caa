"""A validated policy and the result of evaluating one response against it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from canon.gates.policy.rules import Rule, RuleResult

SCHEMA_VERSION: Final = "1.0"


@dataclass(frozen=True, slots=True)
class Policy:
    """A policy that passed ``validate_policy``; evaluate it as often as you like."""

    policy_id: str
    rules: tuple[Rule, ...]
    checks: tuple[Callable[[Any], RuleResult], ...] = field(
        default=(), init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        # Cached so the hot evaluation loop does no attribute lookups per rule.
        object.__setattr__(self, "checks", tuple(rule.check for rule in self.rules))

    @property
    def schema_version(self) -> str:
        """Always ``"1.0"``, the only supported schema."""
        return SCHEMA_VERSION

    def reordered(self, order: tuple[int, ...]) -> Policy:
        """The same policy with its rules in ``order`` (indexes into the declared rules)."""
        return Policy(self.policy_id, tuple(self.rules[index] for index in order))

    def to_json(self) -> dict[str, Any]:
        """The normalised policy document (fresh copies of every nested value)."""
        return {
            "policy_id": self.policy_id,
            "rules": [rule.to_json() for rule in self.rules],
            "schema_version": SCHEMA_VERSION,
        }


@dataclass(frozen=True, slots=True)
class EvaluationResult:
    """Every rule's result in policy order, and whether all of them passed."""

    policy_id: str
    passed: bool
    rule_results: tuple[RuleResult, ...]

    def to_json(self) -> dict[str, Any]:
        """The result document: ``passed``, ``policy_id`` and ``rule_results``."""
        return {
            "passed": self.passed,
            "policy_id": self.policy_id,
            "rule_results": [result.to_json() for result in self.rule_results],
        }
