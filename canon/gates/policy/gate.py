"""The policy gate as Canon's pre-judge check: one ``GateOutcome`` per artifact response."""

from __future__ import annotations

from typing import Any

from canon.core.gate_outcome import GateOutcome
from canon.gates.policy.decoding import decode_json_bytes, decode_json_text
from canon.gates.policy.errors import INVALID_JSON_INPUT, INVALID_RESPONSE, PolicyError
from canon.gates.policy.evaluation import check_response, evaluate_checked
from canon.gates.policy.model import Policy
from canon.gates.policy.validation import validate_policy

GATE_NAME = "policy"


def _parsed(response: Any) -> Any:
    if isinstance(response, bytes):
        return decode_json_bytes(response, what="response")
    if isinstance(response, str):
        return decode_json_text(response, what="response")
    return response


def policy_outcome(policy: Policy | dict[str, Any], response: Any) -> GateOutcome:
    """Pass when every rule holds; fail with "rule 'id' REASON" lines otherwise.

    ``response`` may be a parsed JSON object or JSON text. A response that is not usable
    JSON fails the gate (the artifact is non-canon); a policy that is not valid raises
    ``PolicyError`` because that is a configuration problem, not the artifact's.
    """
    checked = validate_policy(policy)
    try:
        parsed = _parsed(response)
        check_response(parsed)
    except PolicyError as exc:
        if exc.code not in (INVALID_JSON_INPUT, INVALID_RESPONSE):
            raise
        return GateOutcome(GATE_NAME, "fail", (f"response {exc.code}: {exc.message}",))
    result = evaluate_checked(checked, parsed)
    if result.passed:
        return GateOutcome(GATE_NAME, "pass")
    reasons = tuple(
        f"rule {item.rule_id!r} {item.reason_code}"
        for item in result.rule_results
        if not item.passed
    )
    return GateOutcome(GATE_NAME, "fail", reasons)
