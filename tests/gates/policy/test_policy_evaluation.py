"""evaluate_response: each kind against each reason code, and the equality details."""

from __future__ import annotations

from typing import Any

import pytest

from canon.gates.policy import PolicyError, evaluate_response, validate_policy


def single(kind: str, path: str = "x", **extra: Any) -> dict[str, Any]:
    return {
        "schema_version": "1.0",
        "policy_id": "p",
        "rules": [{"rule_id": "r", "kind": kind, "path": path, **extra}],
    }


def reason(policy: dict[str, Any], response: Any) -> str:
    result = evaluate_response(policy, response)
    (only,) = result.rule_results
    assert result.passed is (only.reason_code == "RULE_SATISFIED") is only.passed
    return only.reason_code


KIND_CASES = [
    (single("required_field"), {"x": 0}, "RULE_SATISFIED"),
    (single("required_field"), {}, "FIELD_MISSING"),
    (single("equals", value="a"), {"x": "a"}, "RULE_SATISFIED"),
    (single("equals", value="a"), {"x": "b"}, "VALUE_NOT_EQUAL"),
    (single("equals", value="a"), {}, "FIELD_MISSING"),
    (single("one_of", values=["a", "b"]), {"x": "b"}, "RULE_SATISFIED"),
    (single("one_of", values=["a", "b"]), {"x": "c"}, "VALUE_NOT_ALLOWED"),
    (single("one_of", values=["a", "b"]), {}, "FIELD_MISSING"),
    (single("false"), {"x": False}, "RULE_SATISFIED"),
    (single("false"), {"x": True}, "VALUE_NOT_FALSE"),
    (single("false"), {}, "FIELD_MISSING"),
    (single("empty_list"), {"x": []}, "RULE_SATISFIED"),
    (single("empty_list"), {"x": [1]}, "VALUE_NOT_EMPTY_LIST"),
    (single("empty_list"), {}, "FIELD_MISSING"),
]


@pytest.mark.parametrize(("policy", "response", "expected"), KIND_CASES)
def test_every_kind_reports_each_of_its_reason_codes(
    policy: dict[str, Any], response: dict[str, Any], expected: str
) -> None:
    assert reason(policy, response) == expected


def test_null_satisfies_required_field() -> None:
    assert reason(single("required_field"), {"x": None}) == "RULE_SATISFIED"


def test_null_is_not_equal_rather_than_missing() -> None:
    assert reason(single("equals", value=1), {"x": None}) == "VALUE_NOT_EQUAL"


@pytest.mark.parametrize(
    ("expected", "observed"),
    [(True, 1), (1, True), (False, 0), (1, 1.0), (1.0, 1), (0.0, -0.0), (-0.0, 0.0), ("1", 1)],
)
def test_equality_never_coerces_types(expected: Any, observed: Any) -> None:
    assert reason(single("equals", value=expected), {"x": observed}) == "VALUE_NOT_EQUAL"
    assert reason(single("one_of", values=[expected]), {"x": observed}) == "VALUE_NOT_ALLOWED"


@pytest.mark.parametrize(
    ("expected", "observed"),
    [
        (1.0, 1e0),
        (0.1, 0.10000000000000001),
        (-0.0, -0.0),
        ({"a": 1, "b": [1, {"c": None}]}, {"b": [1, {"c": None}], "a": 1}),
        (9007199254740993, 9007199254740993),
        ("é", "\u00e9"),
    ],
)
def test_canonically_equal_values_match(expected: Any, observed: Any) -> None:
    assert reason(single("equals", value=expected), {"x": observed}) == "RULE_SATISFIED"
    assert reason(single("one_of", values=[expected]), {"x": observed}) == "RULE_SATISFIED"


def test_large_integers_compare_exactly() -> None:
    policy = single("equals", value=9007199254740993)
    assert reason(policy, {"x": 9007199254740992}) == "VALUE_NOT_EQUAL"


def test_strings_are_not_unicode_normalised() -> None:
    assert reason(single("equals", value="\u00e9"), {"x": "e\u0301"}) == "VALUE_NOT_EQUAL"


def test_arrays_compare_in_order() -> None:
    assert reason(single("equals", value=[1, 2]), {"x": [2, 1]}) == "VALUE_NOT_EQUAL"


@pytest.mark.parametrize("observed", [0, "false", None, [], {}])
def test_false_rule_needs_the_boolean_false(observed: Any) -> None:
    assert reason(single("false"), {"x": observed}) == "VALUE_NOT_FALSE"


@pytest.mark.parametrize("observed", [{}, "", None, 0, False])
def test_empty_list_rule_needs_an_empty_array(observed: Any) -> None:
    assert reason(single("empty_list"), {"x": observed}) == "VALUE_NOT_EMPTY_LIST"


@pytest.mark.parametrize("parent", [[{"b": 1}], "s", 1, None, True])
def test_paths_never_pass_through_non_objects(parent: Any) -> None:
    assert reason(single("required_field", "a.b"), {"a": parent}) == "FIELD_MISSING"


def test_paths_never_look_inside_arrays_even_for_matching_keys() -> None:
    assert reason(single("required_field", "a.k"), {"a": [{"k": 1}, {"k": 2}]}) == "FIELD_MISSING"


def test_keys_containing_dots_cannot_be_addressed() -> None:
    assert reason(single("required_field", "a.b"), {"a.b": 1}) == "FIELD_MISSING"


def test_keys_are_case_sensitive() -> None:
    assert reason(single("required_field", "A"), {"a": 1}) == "FIELD_MISSING"


def test_every_rule_is_evaluated_in_declared_order_after_a_failure() -> None:
    policy = {
        "schema_version": "1.0",
        "policy_id": "p",
        "rules": [
            {"rule_id": "z", "kind": "required_field", "path": "missing"},
            {"rule_id": "a", "kind": "false", "path": "f"},
            {"rule_id": "m", "kind": "equals", "path": "e", "value": 2},
        ],
    }
    result = evaluate_response(policy, {"f": False, "e": 3})
    assert [r.rule_id for r in result.rule_results] == ["z", "a", "m"]
    assert [r.reason_code for r in result.rule_results] == [
        "FIELD_MISSING",
        "RULE_SATISFIED",
        "VALUE_NOT_EQUAL",
    ]
    assert result.passed is False


def test_result_document_has_exactly_the_specified_keys_and_no_values() -> None:
    document = evaluate_response(single("equals", value="secret"), {"x": "other"}).to_json()
    assert sorted(document) == ["passed", "policy_id", "rule_results"]
    assert sorted(document["rule_results"][0]) == [
        "kind",
        "passed",
        "path",
        "reason_code",
        "rule_id",
    ]
    assert "secret" not in repr(document) and "other" not in repr(document)


@pytest.mark.parametrize("response", [[], "x", 1, None])
def test_response_must_be_an_object(response: Any) -> None:
    with pytest.raises(PolicyError) as info:
        evaluate_response(single("required_field"), response)
    assert info.value.code == "INVALID_RESPONSE"


@pytest.mark.parametrize(
    "response",
    [{"x": float("nan")}, {"x": {1, 2}}, {"x": "\ud800"}, {"x": "y" * 1_000_001}],
    ids=["nan", "set", "surrogate", "oversized"],
)
def test_response_must_be_usable_json_within_limits(response: Any) -> None:
    with pytest.raises(PolicyError) as info:
        evaluate_response(single("required_field"), response)
    assert info.value.code == "INVALID_RESPONSE"


def test_response_depth_limit_counts_the_top_level() -> None:
    ok: Any = {}
    for _ in range(31):
        ok = {"k": ok}
    evaluate_response(single("required_field"), ok)
    with pytest.raises(PolicyError):
        evaluate_response(single("required_field"), {"k": ok})


def test_a_dict_policy_is_validated_before_the_response_is_looked_at() -> None:
    with pytest.raises(PolicyError) as info:
        evaluate_response({"bad": 1}, "not even an object")
    assert info.value.code == "INVALID_POLICY"


def test_a_validated_policy_is_reused_without_revalidation() -> None:
    policy = validate_policy(single("one_of", values=[1, 2]))
    assert all(evaluate_response(policy, {"x": 2}).passed for _ in range(3))
