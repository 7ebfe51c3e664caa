"""PrecedenceTrace: fail-closed checks on one evaluator result and its projections."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from canon.gates.policy.errors import ORDER_CHECK_INVALID, ORDER_CHECK_TOO_LARGE, PolicyError
from canon.gates.policy.jsonvalue import JsonShapeError, canonical_text, check_json
from canon.gates.policy.model import EvaluationResult, Policy

RESULT_BYTE_LIMIT: Final = 1_000_000
MAX_REASON_CODE_LENGTH: Final = 128

_RESULT_KEYS: Final = frozenset({"passed", "policy_id", "rule_results"})
_RULE_RESULT_KEYS: Final = frozenset({"kind", "passed", "path", "reason_code", "rule_id"})


@dataclass(frozen=True, slots=True)
class Observation:
    """What one stable evaluator result says, split into the dimensions PrecedenceTrace compares."""

    passed: bool
    passes: dict[str, bool]
    evidence: dict[str, tuple[str, str, str]]
    participation: tuple[str, ...]  # sorted rule ids (each appears at most once)
    presentation: tuple[str, ...]  # rule ids in the order the evaluator returned them
    complete: bool


def _invalid(policy: Policy, problem: str) -> PolicyError:
    return PolicyError(
        ORDER_CHECK_INVALID,
        f"evaluator result for policy {policy.policy_id!r} {problem}; the evaluator must return "
        "exactly the evaluation result schema",
        policy_id=policy.policy_id,
    )


def result_text(policy: Policy, raw: Any) -> tuple[str, Any]:
    """Canonical text and plain JSON of one evaluator result, or ORDER_CHECK_* errors."""
    document = raw.to_json() if isinstance(raw, EvaluationResult) else raw
    try:
        check_json(document)
        text = canonical_text(document)
    except (JsonShapeError, TypeError, ValueError) as exc:
        raise _invalid(policy, f"is not usable JSON ({exc})") from None
    size = len(text.encode("utf-8"))
    if size > RESULT_BYTE_LIMIT:
        raise PolicyError(
            ORDER_CHECK_TOO_LARGE,
            f"evaluator result for policy {policy.policy_id!r} is {size} bytes, the limit is "
            f"{RESULT_BYTE_LIMIT}; return only the evaluation result",
            policy_id=policy.policy_id,
        )
    return text, document


def observe(policy: Policy, document: Any) -> Observation:
    """Check one result against the declared rules (fail closed) and project it."""
    if not isinstance(document, dict):
        raise _invalid(policy, "is not a JSON object")
    if document.keys() != _RESULT_KEYS:
        raise _invalid(policy, f"has keys {sorted(document)}, expected {sorted(_RESULT_KEYS)}")
    if type(document["passed"]) is not bool:
        raise _invalid(policy, "has a non-boolean 'passed'")
    if document["policy_id"] != policy.policy_id:
        raise _invalid(policy, "names another policy_id")
    items = document["rule_results"]
    if not isinstance(items, list):
        raise _invalid(policy, "has 'rule_results' that is not an array")
    declared = {rule.rule_id: rule for rule in policy.rules}
    passes: dict[str, bool] = {}
    evidence: dict[str, tuple[str, str, str]] = {}
    presentation: list[str] = []
    for position, item in enumerate(items):
        where = f"rule_results[{position}]"
        if not isinstance(item, dict) or item.keys() != _RULE_RESULT_KEYS:
            raise _invalid(policy, f"has {where} without exactly {sorted(_RULE_RESULT_KEYS)}")
        rule_id = item["rule_id"]
        if not isinstance(rule_id, str) or rule_id not in declared:
            raise _invalid(policy, f"has {where} with a rule_id the policy does not declare")
        if rule_id in passes:
            raise _invalid(policy, f"reports rule {rule_id!r} more than once")
        rule = declared[rule_id]
        if item["kind"] != rule.kind or item["path"] != rule.path:
            raise _invalid(policy, f"reports rule {rule_id!r} with another kind or path")
        if type(item["passed"]) is not bool:
            raise _invalid(policy, f"has {where} with a non-boolean 'passed'")
        reason = item["reason_code"]
        if not isinstance(reason, str) or not 1 <= len(reason) <= MAX_REASON_CODE_LENGTH:
            raise _invalid(policy, f"has {where} with a reason_code that is not 1-128 characters")
        passes[rule_id] = item["passed"]
        evidence[rule_id] = (rule.kind, rule.path, reason)
        presentation.append(rule_id)
    complete = len(passes) == len(declared)
    if document["passed"] != (complete and all(passes.values())):
        raise _invalid(
            policy,
            "reports an overall 'passed' that is not complete participation AND every rule passing",
        )
    return Observation(
        document["passed"], passes, evidence, tuple(sorted(passes)), tuple(presentation), complete
    )


def observe_builtin(result: EvaluationResult) -> Observation:
    """Project a result of the built-in evaluator (trusted, so no schema checks)."""
    items = result.rule_results
    return Observation(
        result.passed,
        {item.rule_id: item.passed for item in items},
        {item.rule_id: (item.kind, item.path, item.reason_code) for item in items},
        tuple(sorted(item.rule_id for item in items)),
        tuple(item.rule_id for item in items),
        True,
    )
