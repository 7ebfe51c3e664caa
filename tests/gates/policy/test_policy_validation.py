"""validate_policy: every rejection, in the specified order, with rule context."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from canon.errors import GateError
from canon.gates.policy import Policy, PolicyError, validate_policy


def policy_with(*rules: dict[str, Any], **top: Any) -> dict[str, Any]:
    document: dict[str, Any] = {"schema_version": "1.0", "policy_id": "p-1", "rules": list(rules)}
    document.update(top)
    return document


def rule(rule_id: str = "r1", kind: str = "required_field", path: str = "a", **extra: Any) -> Any:
    return {"rule_id": rule_id, "kind": kind, "path": path, **extra}


def rejection(document: Any) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        validate_policy(document)
    assert info.value.code == "INVALID_POLICY"
    assert isinstance(info.value, GateError)
    return info.value


def test_a_valid_policy_compiles_with_every_kind() -> None:
    policy = validate_policy(
        policy_with(
            rule("r1"),
            rule("r2", "equals", "b.c", value={"x": [1]}),
            rule("r3", "one_of", "d", values=["x", 1]),
            rule("r4", "false", "e"),
            rule("r5", "empty_list", "f"),
        )
    )
    assert isinstance(policy, Policy)
    assert [r.rule_id for r in policy.rules] == ["r1", "r2", "r3", "r4", "r5"]
    assert validate_policy(policy) is policy


def test_policy_must_be_an_object() -> None:
    assert "must be a JSON object" in rejection([]).message


def test_library_values_json_cannot_represent_are_rejected() -> None:
    error = rejection(policy_with(rule("r1", "equals", "a", value={1, 2})))
    assert "set is not a JSON value" in error.message
    assert "rules" in error.message


@pytest.mark.parametrize(
    "bad",
    [float("nan"), float("inf"), (1, 2), b"x", 10**5000],
    ids=["nan", "inf", "tuple", "bytes", "huge"],
)
def test_library_non_json_values_are_rejected(bad: Any) -> None:
    rejection(policy_with(rule("r1", "equals", "a", value=bad)))


def test_non_string_keys_are_rejected() -> None:
    rejection(policy_with(rule("r1", "equals", "a", value={1: "x"})))


def test_whole_policy_nesting_limit_applies_to_library_input() -> None:
    deep: Any = []
    for _ in range(40):
        deep = [deep]
    assert "nesting deeper" in rejection(policy_with(rule("r1", "equals", "a", value=deep))).message


def test_whole_policy_byte_limit_applies_to_library_input() -> None:
    big = rule("r1", "equals", "a", value="x" * 1_000_000)
    assert "canonical JSON" in rejection(policy_with(big)).message


def test_missing_and_unknown_fields_are_listed_together() -> None:
    error = rejection({"policy_id": "p", "extra": 1, "zzz": 2})
    assert "missing field(s) 'rules', 'schema_version'" in error.message
    assert "unknown field(s) 'extra', 'zzz'" in error.message


@pytest.mark.parametrize("version", [1.0, "1", "1.0 ", None, "2.0"])
def test_schema_version_must_be_the_string_one_point_zero(version: Any) -> None:
    assert "schema_version" in rejection(policy_with(rule(), schema_version=version)).message


@pytest.mark.parametrize(
    "policy_id", ["", "-x", ".x", "a b", "a/b", "a:b", "é", "x\n", "a" * 129, 7, None]
)
def test_policy_id_must_be_an_identifier(policy_id: Any) -> None:
    assert "policy_id" in rejection(policy_with(rule(), policy_id=policy_id)).message


def test_identifiers_of_128_characters_are_accepted() -> None:
    validate_policy(policy_with(rule("r" * 128), policy_id="P" * 128))


@pytest.mark.parametrize("rules", [[], {}, "r", None])
def test_rules_must_be_a_non_empty_array(rules: Any) -> None:
    error = rejection(policy_with(rules=rules))
    assert "non-empty array" in error.message
    assert error.policy_id == "p-1"


def test_more_than_256_rules_is_rejected() -> None:
    validate_policy(policy_with(*[rule(f"r{i}") for i in range(256)]))
    assert "limit is 256" in rejection(policy_with(*[rule(f"r{i}") for i in range(257)])).message


def test_a_rule_must_be_an_object() -> None:
    error = rejection(policy_with(rule(), "nope"))
    assert error.rule_index == 1
    assert "rule at index 1" in error.message


@pytest.mark.parametrize("kind", [None, 3, "Equals", "regex"])
def test_unknown_kinds_are_rejected(kind: Any) -> None:
    error = rejection(policy_with(rule(kind=kind)))
    assert "kind" in error.message
    assert (error.rule_id, error.rule_index, error.policy_id) == ("r1", 0, "p-1")


def test_missing_kind_is_rejected() -> None:
    assert "no kind" in rejection(policy_with({"rule_id": "r1", "path": "a"})).message


def test_kind_is_checked_before_the_field_set() -> None:
    error = rejection(policy_with({"kind": "Equals", "extra": 1}))
    assert "unsupported kind" in error.message


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (rule(value=1), "unknown field(s) 'value'"),
        (rule(kind="equals"), "lacks field(s) 'value'"),
        (rule(kind="one_of"), "lacks field(s) 'values'"),
        (rule(kind="false", values=[1]), "unknown field(s) 'values'"),
        ({"kind": "empty_list", "path": "a"}, "lacks field(s) 'rule_id'"),
    ],
)
def test_field_set_must_match_the_kind(raw: Any, fragment: str) -> None:
    assert fragment in rejection(policy_with(raw)).message


@pytest.mark.parametrize("rule_id", ["", "_x", "a b", 5])
def test_rule_id_must_be_an_identifier(rule_id: Any) -> None:
    assert "invalid rule_id" in rejection(policy_with(rule(rule_id))).message


def test_duplicate_rule_ids_are_rejected_case_sensitively() -> None:
    validate_policy(policy_with(rule("Rule"), rule("rule")))
    error = rejection(policy_with(rule("dup"), rule("dup")))
    assert (error.rule_id, error.rule_index) == ("dup", 1)
    assert "repeats a rule_id" in error.message


@pytest.mark.parametrize(
    "path", ["", ".a", "a.", "a..b", "1a", "-a", "$a", "a[0]", "a b", "é", "a.0", 3]
)
def test_malformed_paths_are_rejected(path: Any) -> None:
    assert "invalid path" in rejection(policy_with(rule(path=path))).message


def test_path_is_checked_after_the_rule_id() -> None:
    assert "invalid rule_id" in rejection(policy_with(rule("?", path="?"))).message


def test_paths_of_32_segments_pass_and_33_fail() -> None:
    validate_policy(policy_with(rule(path=".".join(["s"] * 32))))
    error = rejection(policy_with(rule(path=".".join(["s"] * 33))))
    assert "33 segments" in error.message


def test_grammatical_path_variants_are_accepted() -> None:
    validate_policy(policy_with(rule(path="_a.B-c.d_9")))


@pytest.mark.parametrize("values", [[], None, "x", {"a": 1}])
def test_one_of_needs_a_non_empty_array(values: Any) -> None:
    assert "non-empty array" in rejection(policy_with(rule(kind="one_of", values=values))).message


def test_one_of_is_limited_to_256_values() -> None:
    validate_policy(policy_with(rule(kind="one_of", values=list(range(256)))))
    error = rejection(policy_with(rule(kind="one_of", values=list(range(257)))))
    assert "limit is 256" in error.message


@pytest.mark.parametrize(
    "values",
    [
        ["a", "a"],
        [{"a": 1, "b": 2}, {"b": 2, "a": 1}],
        ["\u00e9", "é"],
        [1.0, 1e0],
        [[1, 2], [1, 2]],
        [None, None],
    ],
)
def test_one_of_rejects_canonical_duplicates(values: list[Any]) -> None:
    assert "same JSON value" in rejection(policy_with(rule(kind="one_of", values=values))).message


@pytest.mark.parametrize(
    "values", [[1, 1.0], [True, 1], [0.0, -0.0], [False, 0], ["1", 1], ["e\u0301", "\u00e9"]]
)
def test_one_of_keeps_values_that_only_look_alike(values: list[Any]) -> None:
    validate_policy(policy_with(rule(kind="one_of", values=values)))


def test_the_first_failing_rule_wins() -> None:
    error = rejection(policy_with(rule("ok"), rule("bad", path="1"), rule("worse", kind="x")))
    assert error.rule_index == 1


def test_validated_policy_is_isolated_from_later_mutation_of_the_source() -> None:
    source = policy_with(rule("r1", "equals", "a", value={"k": [1]}))
    policy = validate_policy(source)
    source["rules"][0]["value"]["k"].append(2)
    source["rules"].append(rule("r2"))
    assert policy.rules[0].value == {"k": [1]}
    assert len(policy.rules) == 1


def test_validated_values_cannot_be_mutated_through_the_policy() -> None:
    policy = validate_policy(policy_with(rule("r1", "equals", "a", value=[1])))
    policy.rules[0].value.append(2)
    assert policy.rules[0].value == [1]


def test_aliased_source_values_are_copied_separately() -> None:
    shared = [1]
    policy = validate_policy(policy_with(rule("r1", "one_of", "a", values=[shared, [shared]])))
    assert policy.to_json()["rules"][0]["values"] == [[1], [[1]]]


def test_normalised_form_round_trips() -> None:
    source = policy_with(rule("r1", "one_of", "a", values=[0.1, -0.0, "é"]))
    assert validate_policy(copy.deepcopy(source)).to_json() == source
