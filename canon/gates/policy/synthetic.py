"""Deterministic passing and failing fixtures derived from a policy, verified before return."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from canon.gates.policy.errors import SYNTHETIC_GENERATION_FAILED, PolicyError
from canon.gates.policy.evaluation import check_response, evaluate_checked
from canon.gates.policy.jsonvalue import canonical_text, equality_key
from canon.gates.policy.model import EvaluationResult, Policy
from canon.gates.policy.rules import EMPTY_LIST, EQUALS, FALSE, ONE_OF, Rule
from canon.gates.policy.validation import validate_policy

COMPARISON_BUDGET: Final = 65_536


@dataclass(frozen=True, slots=True)
class SyntheticCase:
    """One generated response (as canonical text) and its verified evaluation."""

    response_text: str
    evaluation: EvaluationResult

    @property
    def response(self) -> dict[str, Any]:
        """A fresh copy of the generated response."""
        value: dict[str, Any] = json.loads(self.response_text)
        return value

    def to_json(self) -> dict[str, Any]:
        """``{"evaluation", "response"}``."""
        return {"evaluation": self.evaluation.to_json(), "response": self.response}


@dataclass(frozen=True, slots=True)
class SyntheticCases:
    """A verified passing case and a verified failing case for one policy."""

    policy_id: str
    passing_case: SyntheticCase
    failing_case: SyntheticCase

    def to_json(self) -> dict[str, Any]:
        """The case bundle document."""
        return {
            "failing_case": self.failing_case.to_json(),
            "passing_case": self.passing_case.to_json(),
            "policy_id": self.policy_id,
        }


class _Search:
    """Failure messages and the comparison budget shared by one generation."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.comparisons = 0

    def fail(self, problem: str, remedy: str) -> PolicyError:
        return PolicyError(
            SYNTHETIC_GENERATION_FAILED,
            f"cannot generate cases for policy {self.policy.policy_id!r}: {problem}; {remedy}",
            policy_id=self.policy.policy_id,
        )

    def spend(self, count: int = 1) -> None:
        self.comparisons += count
        if self.comparisons > COMPARISON_BUDGET:
            raise self.fail(
                f"the candidate search needed more than {COMPARISON_BUDGET} comparisons",
                "simplify overlapping one_of rules",
            )


def _fixed_value(rule: Rule) -> Any:
    if rule.kind == EQUALS:
        return rule.value
    return False if rule.kind == FALSE else []


def _candidates(path: str, rules: list[Rule], search: _Search) -> list[Any]:
    """Values that satisfy every rule on ``path`` considered alone, in preference order."""
    fixed = [_fixed_value(rule) for rule in rules if rule.kind in (EQUALS, FALSE, EMPTY_LIST)]
    choices = [rule for rule in rules if rule.kind == ONE_OF]
    if fixed:
        key = equality_key(fixed[0])
        if any(equality_key(other) != key for other in fixed[1:]):
            raise search.fail(
                f"rules on path {path!r} require different fixed values", "remove the conflict"
            )
        for rule in choices:
            search.spend()
            if key not in rule._keys:
                raise search.fail(
                    f"one_of rule {rule.rule_id!r} does not allow the value other rules on "
                    f"path {path!r} require",
                    "add the value to the one_of list",
                )
        return [fixed[0]]
    if choices:
        first, others = choices[0], choices[1:]
        shared = []
        for value in first.values or []:
            search.spend(len(others))
            key = equality_key(value)
            if all(key in other._keys for other in others):
                shared.append(value)
        if not shared:
            raise search.fail(
                f"the one_of rules on path {path!r} share no value", "make the lists overlap"
            )
        return shared
    return [None]


def _place(response: dict[str, Any], segments: tuple[str, ...], value: Any) -> bool:
    """Write ``value`` at ``segments``, creating parents; False if a parent is not an object."""
    node = response
    for segment in segments[:-1]:
        child = node.get(segment)
        if child is None:
            child = node[segment] = {}
        if not isinstance(child, dict):
            return False
        node = child
    node[segments[-1]] = value
    return True


def _holds(rules: list[Rule], response: dict[str, Any]) -> bool:
    return all(rule.check(response).passed for rule in rules)


def _build_passing(policy: Policy, search: _Search) -> dict[str, Any]:
    groups: dict[str, list[Rule]] = {}
    for rule in policy.rules:
        groups.setdefault(rule.path, []).append(rule)
    # Deepest paths first, so an ancestor's value is chosen knowing what its descendants need.
    visit = sorted(groups, key=lambda path: (-path.count("."), path))
    response: dict[str, Any] = {}
    done: list[Rule] = []
    for path in visit:
        rules = groups[path]
        if _holds(rules, response):
            done.extend(rules)
            continue
        descendants = [rule for rule in done if rule.path.startswith(path + ".")]
        segments = rules[0].segments
        for candidate in _candidates(path, rules, search):
            trial = copy.deepcopy(response)
            if not _place(trial, segments, candidate):
                raise search.fail(
                    f"a parent of path {path!r} is not an object", "separate the nested paths"
                )
            search.spend(len(descendants) + 1)
            if _holds(rules, trial) and _holds(descendants, trial):
                response = trial
                break
        else:
            raise search.fail(
                f"no allowed value at path {path!r} keeps the rules on its nested paths "
                "satisfied (incompatible nested paths)",
                "relax the ancestor rule or drop the nested rules",
            )
        done.extend(rules)
    return response


def _delete(response: dict[str, Any], segments: tuple[str, ...]) -> None:
    node: Any = response
    for segment in segments[:-1]:
        node = node[segment]
    del node[segments[-1]]


def generate_synthetic_cases(policy: Policy | Mapping[str, Any]) -> SyntheticCases:
    """Build one passing and one failing response for the policy and verify both."""
    checked = validate_policy(policy)
    search = _Search(checked)
    passing = _build_passing(checked, search)
    try:
        check_response(passing)
    except PolicyError as exc:
        raise search.fail(f"the passing case breaks the JSON limits ({exc})", "flatten") from None
    passing_result = evaluate_checked(checked, passing)
    if not passing_result.passed:
        raise search.fail("the built response does not pass every rule", "remove the conflict")
    failing = copy.deepcopy(passing)
    _delete(failing, checked.rules[0].segments)
    failing_result = evaluate_checked(checked, failing)
    if failing_result.passed:
        raise search.fail("the failing case still passes", "report this as a bug")
    return SyntheticCases(
        checked.policy_id,
        SyntheticCase(canonical_text(passing), passing_result),
        SyntheticCase(canonical_text(failing), failing_result),
    )
