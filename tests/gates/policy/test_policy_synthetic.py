"""generate_synthetic_cases: verified fixtures, and fail-closed conflicts."""

from __future__ import annotations

from typing import Any

import pytest

from canon.gates.policy import PolicyError, evaluate_response, generate_synthetic_cases, synthetic


def policy_of(*rules: tuple[str, str, str, Any]) -> dict[str, Any]:
    built = []
    for rule_id, kind, path, extra in rules:
        rule: dict[str, Any] = {"rule_id": rule_id, "kind": kind, "path": path}
        if kind == "equals":
            rule["value"] = extra
        if kind == "one_of":
            rule["values"] = extra
        built.append(rule)
    return {"schema_version": "1.0", "policy_id": "gen", "rules": built}


def generate(*rules: tuple[str, str, str, Any]) -> dict[str, Any]:
    return generate_synthetic_cases(policy_of(*rules)).to_json()


def refusal(*rules: tuple[str, str, str, Any]) -> str:
    with pytest.raises(PolicyError) as info:
        generate_synthetic_cases(policy_of(*rules))
    assert info.value.code == "SYNTHETIC_GENERATION_FAILED"
    assert info.value.policy_id == "gen"
    return info.value.message


def test_every_kind_yields_a_verified_pair() -> None:
    rules = [
        ("req", "required_field", "meta.note", None),
        ("eq", "equals", "decision", "approve"),
        ("one", "one_of", "level", ["low", "high"]),
        ("no", "false", "flags.blocked", None),
        ("none", "empty_list", "errors", None),
    ]
    bundle = generate(*rules)
    assert sorted(bundle) == ["failing_case", "passing_case", "policy_id"]
    passing = bundle["passing_case"]
    assert passing["response"] == {
        "decision": "approve",
        "errors": [],
        "flags": {"blocked": False},
        "level": "low",
        "meta": {"note": None},
    }
    assert passing["evaluation"]["passed"] is True
    failing = bundle["failing_case"]
    assert failing["evaluation"]["passed"] is False
    assert failing["evaluation"]["rule_results"][0]["reason_code"] == "FIELD_MISSING"
    assert "note" not in failing["response"]["meta"]
    # The bundle's evaluations are what the evaluator says about its responses.
    policy = policy_of(*rules)
    for case in (passing, failing):
        assert evaluate_response(policy, case["response"]).to_json() == case["evaluation"]


def test_generation_is_deterministic() -> None:
    rules = [("a", "one_of", "x.y", [3, 2, 1]), ("b", "one_of", "x.y", [2, 3])]
    assert generate(*rules) == generate(*rules)
    assert generate(*rules)["passing_case"]["response"] == {"x": {"y": 3}}


def test_conflicting_fixed_values_fail() -> None:
    assert "different fixed values" in refusal(("a", "equals", "x", 1), ("b", "equals", "x", 1.0))


def test_false_and_empty_list_on_one_path_conflict() -> None:
    refusal(("a", "false", "x", None), ("b", "empty_list", "x", None))


def test_fixed_value_outside_a_one_of_fails() -> None:
    assert "does not allow" in refusal(("a", "equals", "x", "a"), ("b", "one_of", "x", ["b"]))


def test_disjoint_one_of_lists_fail() -> None:
    assert "share no value" in refusal(("a", "one_of", "x", [1]), ("b", "one_of", "x", [2]))


def test_ancestor_value_that_drops_a_nested_path_is_incompatible() -> None:
    message = refusal(("a", "equals", "cfg", {"mode": "safe"}), ("b", "required_field", "cfg.x", 0))
    assert "incompatible nested paths" in message


def test_scalar_ancestor_with_a_nested_rule_is_incompatible() -> None:
    refusal(("a", "equals", "cfg", 5), ("b", "false", "cfg.on", None))


def test_candidate_search_picks_an_ancestor_value_that_keeps_descendants() -> None:
    bundle = generate(
        ("a", "one_of", "cfg", [0, {"mode": "safe", "x": None}]),
        ("b", "required_field", "cfg.x", None),
    )
    assert bundle["passing_case"]["response"] == {"cfg": {"mode": "safe", "x": None}}


def test_ancestor_already_satisfied_by_its_descendants_is_skipped() -> None:
    bundle = generate(("a", "equals", "cfg", {"mode": "safe"}), ("b", "equals", "cfg.mode", "safe"))
    assert bundle["passing_case"]["response"] == {"cfg": {"mode": "safe"}}


def test_required_field_alone_becomes_null() -> None:
    assert generate(("a", "required_field", "x", None))["passing_case"]["response"] == {"x": None}


def test_failing_case_removes_the_first_declared_rule_and_everything_below_it() -> None:
    bundle = generate(("top", "required_field", "a", None), ("below", "false", "a.b", None))
    codes = [r["reason_code"] for r in bundle["failing_case"]["evaluation"]["rule_results"]]
    assert codes == ["FIELD_MISSING", "FIELD_MISSING"]
    assert bundle["failing_case"]["response"] == {}


def test_unicode_values_are_kept() -> None:
    bundle = generate(("a", "equals", "x", "héllo ✓"))
    assert bundle["passing_case"]["response"] == {"x": "héllo ✓"}


def test_candidate_search_has_a_comparison_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # Within the policy limits a search costs at most 256 comparisons per rule, so the real
    # budget is a safety net; a lowered budget shows that it stops the search.
    monkeypatch.setattr(synthetic, "COMPARISON_BUDGET", 100)
    values: list[Any] = [*range(200), {"x": None, "y": 1}]
    rules = [("a", "one_of", "cfg", values), ("b", "required_field", "cfg.x", None)]
    assert "comparisons" in refusal(*rules)
    monkeypatch.setattr(synthetic, "COMPARISON_BUDGET", 65_536)
    assert generate(*rules)["passing_case"]["response"] == {"cfg": {"x": None, "y": 1}}


def test_invalid_policy_is_reported_as_invalid_policy() -> None:
    with pytest.raises(PolicyError) as info:
        generate_synthetic_cases({"schema_version": "1.0"})
    assert info.value.code == "INVALID_POLICY"
