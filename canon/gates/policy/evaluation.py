"""``evaluate_response``: every rule, in declared order, against one response object."""

from __future__ import annotations

from typing import Any

from canon.gates.policy.errors import INVALID_RESPONSE, PolicyError
from canon.gates.policy.jsonvalue import (
    MAX_CANONICAL_BYTES,
    JsonShapeError,
    check_json,
    json_type_name,
)
from canon.gates.policy.model import EvaluationResult, Policy
from canon.gates.policy.validation import validate_policy


def check_response(response: Any, *, code: str = INVALID_RESPONSE) -> None:
    """Raise ``code`` unless the response is a JSON object within the structural limits."""
    if not isinstance(response, dict):
        raise PolicyError(
            code,
            f"response must be a JSON object, got {json_type_name(response)}; "
            "wrap the output in an object",
        )
    try:
        check_json(response, byte_limit=MAX_CANONICAL_BYTES)
    except JsonShapeError as exc:
        raise PolicyError(
            code,
            f"response is not usable JSON within the limits: {exc.problem} at {exc.location}; "
            "send plain, finite JSON within the limits",
        ) from None


def evaluate_checked(policy: Policy, response: dict[str, Any]) -> EvaluationResult:
    """Evaluate a validated policy against a response that already passed ``check_response``."""
    results = tuple([check(response) for check in policy.checks])
    passed = True
    for result in results:
        if not result.passed:
            passed = False
            break
    return EvaluationResult(policy.policy_id, passed, results)


def evaluate_response(policy: Policy | dict[str, Any], response: Any) -> EvaluationResult:
    """Evaluate every rule against ``response``; a dict policy is validated first."""
    checked_policy = validate_policy(policy)
    check_response(response)
    return evaluate_checked(checked_policy, response)
