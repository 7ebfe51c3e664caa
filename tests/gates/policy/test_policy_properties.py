"""Property tests: random bytes and random JSON only ever yield a result or a PolicyError."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from canon.gates.policy import (
    PolicyError,
    decode_json_bytes,
    evaluate_response,
    generate_synthetic_cases,
    validate_policy,
)
from canon.gates.policy.jsonvalue import canonical_text, equality_key

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=25,
)
idents = st.sampled_from(["a", "b", "r1", "x-y", "_bad", "1", "", "a.b"])
paths = st.sampled_from(["a", "a.b", "b", "a.b.c", "_c", "a..b", "1x", "a[0]"])
kinds = st.sampled_from(["required_field", "equals", "one_of", "false", "empty_list", "Equals"])


@st.composite
def policy_like(draw: st.DrawFn) -> Any:
    rules = []
    for _ in range(draw(st.integers(0, 4))):
        rule: dict[str, Any] = {"rule_id": draw(idents), "kind": draw(kinds), "path": draw(paths)}
        if draw(st.booleans()):
            rule["value"] = draw(json_values)
        if draw(st.booleans()):
            rule["values"] = draw(st.lists(json_values, max_size=4))
        rules.append(rule)
    document: dict[str, Any] = {"schema_version": "1.0", "policy_id": draw(idents), "rules": rules}
    if draw(st.booleans()):
        document[draw(st.sampled_from(["schema_version", "extra", "rules"]))] = draw(json_values)
    return document


def response_like() -> Any:
    return st.dictionaries(st.sampled_from(["a", "b", "c", "_c"]), json_values, max_size=3)


@SETTINGS
@given(st.binary(max_size=200))
def test_random_bytes_decode_or_fail_controlled(data: bytes) -> None:
    try:
        decode_json_bytes(data)
    except PolicyError as exc:
        assert exc.code == "INVALID_JSON_INPUT"


@SETTINGS
@given(json_values)
def test_serialised_json_round_trips_through_the_strict_decoder(value: Any) -> None:
    text = json.dumps(value, ensure_ascii=False)
    try:
        decoded = decode_json_bytes(text.encode("utf-8"))
    except PolicyError as exc:
        # Hypothesis may generate lone surrogates; anything else must decode.
        assert "surrogate" in exc.message or "duplicate" in exc.message
        return
    assert canonical_text(decoded) == canonical_text(value)


@SETTINGS
@given(json_values)
def test_random_json_is_validated_or_rejected_as_invalid_policy(value: Any) -> None:
    try:
        validate_policy(value)
    except PolicyError as exc:
        assert exc.code == "INVALID_POLICY"


@SETTINGS
@given(policy_like(), response_like())
def test_policy_like_documents_validate_evaluate_and_generate_under_control(
    document: Any, response: Any
) -> None:
    try:
        policy = validate_policy(document)
    except PolicyError as exc:
        assert exc.code == "INVALID_POLICY"
        return
    try:
        result = evaluate_response(policy, response)
    except PolicyError as exc:
        assert exc.code == "INVALID_RESPONSE"
    else:
        assert len(result.rule_results) == len(policy.rules)
        assert result.passed == all(r.passed for r in result.rule_results)
    try:
        cases = generate_synthetic_cases(policy)
    except PolicyError as exc:
        assert exc.code == "SYNTHETIC_GENERATION_FAILED"
    else:
        assert evaluate_response(policy, cases.passing_case.response).passed
        assert not evaluate_response(policy, cases.failing_case.response).passed


@SETTINGS
@given(json_values, json_values)
def test_equality_key_agrees_with_canonical_text(left: Any, right: Any) -> None:
    try:
        same_text = canonical_text(left) == canonical_text(right)
    except ValueError:
        return
    assert (equality_key(left) == equality_key(right)) is same_text
