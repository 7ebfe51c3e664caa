"""The pre-judge gate outcome and the plain-words explanation."""

from __future__ import annotations

from typing import Any

import pytest

from canon.core.gate_outcome import GateOutcome
from canon.gates.policy import PolicyError, explain_evaluation, policy_outcome, validate_policy

POLICY = validate_policy(
    {
        "schema_version": "1.0",
        "policy_id": "gate",
        "rules": [
            {"rule_id": "decided", "kind": "one_of", "path": "decision", "values": ["yes", "no"]},
            {"rule_id": "note", "kind": "required_field", "path": "meta.note"},
            {"rule_id": "clean", "kind": "empty_list", "path": "errors"},
        ],
    }
)


def test_passing_response_passes_the_gate() -> None:
    outcome = policy_outcome(POLICY, {"decision": "yes", "meta": {"note": None}, "errors": []})
    assert outcome == GateOutcome("policy", "pass")
    assert not outcome.stops


def test_failing_rules_stop_the_artifact_with_ids_and_reason_codes() -> None:
    outcome = policy_outcome(POLICY, {"decision": "maybe", "errors": []})
    assert outcome.status == "fail" and outcome.stops
    assert outcome.reasons == ("rule 'decided' VALUE_NOT_ALLOWED", "rule 'note' FIELD_MISSING")


def test_json_text_responses_are_decoded_strictly() -> None:
    assert policy_outcome(POLICY, '{"decision":"no","meta":{"note":1},"errors":[]}').status == (
        "pass"
    )
    outcome = policy_outcome(POLICY, '{"decision": "no", "decision": "yes"}')
    assert outcome.status == "fail"
    assert outcome.reasons[0].startswith("response INVALID_JSON_INPUT")


def test_non_object_response_fails_the_gate() -> None:
    outcome = policy_outcome(POLICY, ["not", "an", "object"])
    assert outcome.reasons[0].startswith("response INVALID_RESPONSE")


def test_invalid_policy_raises_a_gate_error() -> None:
    with pytest.raises(PolicyError) as info:
        policy_outcome({"schema_version": "1.0"}, {})
    assert info.value.code == "INVALID_POLICY"


def explained(response: Any) -> list[dict[str, Any]]:
    document = explain_evaluation(POLICY, response).to_json()
    assert sorted(document) == ["passed", "policy_id", "rule_explanations"]
    explanations: list[dict[str, Any]] = document["rule_explanations"]
    return explanations


def test_explain_names_the_absent_segment() -> None:
    note = explained({"meta": {}})[1]
    assert note["reason_code"] == "FIELD_MISSING"
    assert note["missing_at"] == "meta.note"
    assert note["blocked_by_type"] is None
    assert "has no member 'note'" in note["explanation"]


def test_explain_names_the_parent_that_is_not_an_object() -> None:
    note = explained({"meta": [{"note": 1}]})[1]
    assert note["blocked_by_type"] == "array"
    assert "not an object" in note["explanation"]


def test_explain_reports_the_observed_type_but_never_the_value() -> None:
    decided = explained({"decision": "top-secret-value"})[0]
    assert decided["observed_type"] == "string"
    assert "top-secret-value" not in str(decided)
    assert decided["reason_code"] == "VALUE_NOT_ALLOWED"


def test_explain_says_why_passing_rules_pass() -> None:
    items = explained({"decision": "yes", "meta": {"note": None}, "errors": []})
    assert all(item["passed"] for item in items)
    assert "is present" in items[1]["explanation"]
