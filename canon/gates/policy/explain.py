"""``explain_evaluation``: why each rule passed or failed, in plain words and without values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from canon.gates.policy.evaluation import check_response, evaluate_checked
from canon.gates.policy.jsonvalue import json_type_name
from canon.gates.policy.model import Policy
from canon.gates.policy.paths import MISSING, blocked_at, resolve
from canon.gates.policy.rules import (
    EMPTY_LIST,
    EQUALS,
    FALSE,
    ONE_OF,
    RULE_SATISFIED,
    Rule,
    RuleResult,
)
from canon.gates.policy.validation import validate_policy


@dataclass(frozen=True, slots=True)
class RuleExplanation:
    """One rule's result plus a sentence saying why, and where resolution stopped if it did."""

    result: RuleResult
    explanation: str
    missing_at: str | None = None
    blocked_by_type: str | None = None
    observed_type: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The explanation as a JSON object (never includes response values)."""
        return {
            **self.result.to_json(),
            "blocked_by_type": self.blocked_by_type,
            "explanation": self.explanation,
            "missing_at": self.missing_at,
            "observed_type": self.observed_type,
        }


@dataclass(frozen=True, slots=True)
class Explanation:
    """The evaluation of one response with an explanation per rule."""

    policy_id: str
    passed: bool
    rules: tuple[RuleExplanation, ...]

    def to_json(self) -> dict[str, Any]:
        """``{"passed", "policy_id", "rule_explanations"}``."""
        return {
            "passed": self.passed,
            "policy_id": self.policy_id,
            "rule_explanations": [item.to_json() for item in self.rules],
        }


_EXPECTATION = {
    EQUALS: "the value required by the rule",
    ONE_OF: "one of the rule's allowed values",
    FALSE: "the JSON boolean false",
    EMPTY_LIST: "an empty array",
}


def _explain_missing(rule: Rule, result: RuleResult, response: Any) -> RuleExplanation:
    index, blocker = blocked_at(response, rule.segments)
    prefix = ".".join(rule.segments[: index + 1])
    if blocker is MISSING:
        parent = ".".join(rule.segments[:index]) or "the top-level object"
        text = (
            f"'{rule.path}' is missing: {parent} has no member '{rule.segments[index]}', "
            "so the rule fails closed"
        )
        return RuleExplanation(result, text, missing_at=prefix)
    parent_path = ".".join(rule.segments[:index])
    kind = json_type_name(blocker)
    text = (
        f"'{rule.path}' is missing: '{parent_path}' is {('an ' if kind[0] in 'aeio' else 'a ')}"
        f"{kind}, not an object, so '{rule.segments[index]}' cannot be looked up "
        "(paths never index arrays)"
    )
    return RuleExplanation(result, text, missing_at=prefix, blocked_by_type=kind)


def _explain(rule: Rule, result: RuleResult, response: Any) -> RuleExplanation:
    if result.reason_code == RULE_SATISFIED:
        if rule.kind == "required_field":
            text = f"'{rule.path}' is present"
        else:
            text = f"'{rule.path}' holds {_EXPECTATION[rule.kind]}"
        return RuleExplanation(result, text)
    value = resolve(response, rule.segments)
    if value is MISSING:
        return _explain_missing(rule, result, response)
    observed = json_type_name(value)
    text = (
        f"'{rule.path}' is present but holds a JSON {observed} that is not "
        f"{_EXPECTATION[rule.kind]}"
    )
    if rule.kind in (EQUALS, ONE_OF):
        text += " (comparison is exact: true is not 1, 1 is not 1.0, 0.0 is not -0.0)"
    return RuleExplanation(result, text, observed_type=observed)


def explain_evaluation(policy: Policy | dict[str, Any], response: Any) -> Explanation:
    """Evaluate ``response`` and say, for each rule, why it passed or failed."""
    checked = validate_policy(policy)
    check_response(response)
    evaluation = evaluate_checked(checked, response)
    items = tuple(
        _explain(rule, result, response)
        for rule, result in zip(checked.rules, evaluation.rule_results, strict=True)
    )
    return Explanation(checked.policy_id, evaluation.passed, items)
