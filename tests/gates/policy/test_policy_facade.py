"""The public face of ``canon.gates.policy``."""

from __future__ import annotations

import canon.gates.policy as facade
from canon.errors import GateError


def test_public_names_are_sorted_and_importable() -> None:
    names = facade.__all__
    assert names == sorted(names, key=lambda name: (not name.isupper(), name))
    assert all(hasattr(facade, name) for name in names)


def test_the_issue_names_are_public() -> None:
    for name in (
        "validate_policy",
        "evaluate_response",
        "check_order_conformance",
        "generate_synthetic_cases",
        "explain_evaluation",
        "policy_outcome",
        "PolicyError",
    ):
        assert name in facade.__all__


def test_error_codes_and_vocabularies_are_exactly_the_specified_ones() -> None:
    assert set(facade.ERROR_CODES) == {
        "INVALID_COMMAND",
        "INVALID_JSON_INPUT",
        "INVALID_POLICY",
        "INVALID_RESPONSE",
        "ORDER_CHECK_INVALID",
        "ORDER_CHECK_TOO_LARGE",
        "SYNTHETIC_GENERATION_FAILED",
        "JSON_OUTPUT_ERROR",
        "INVALID_DATA",
        "PLAYGROUND_UNAVAILABLE",
    }
    assert facade.REASON_CODES == (
        "RULE_SATISFIED",
        "FIELD_MISSING",
        "VALUE_NOT_EQUAL",
        "VALUE_NOT_ALLOWED",
        "VALUE_NOT_FALSE",
        "VALUE_NOT_EMPTY_LIST",
    )
    assert facade.RULE_KINDS == ("required_field", "equals", "one_of", "false", "empty_list")


def test_policy_error_is_a_gate_error_with_context() -> None:
    error = facade.PolicyError("INVALID_POLICY", "m", policy_id="p", rule_id="r", rule_index=2)
    assert isinstance(error, GateError)
    assert error.to_json() == {
        "error": {
            "code": "INVALID_POLICY",
            "message": "m",
            "policy_id": "p",
            "rule_id": "r",
            "rule_index": 2,
        }
    }
    assert facade.PolicyError("INVALID_DATA", "m").to_json() == {
        "error": {"code": "INVALID_DATA", "message": "m"}
    }
