"""``when:`` conditions in YAML and the Python ``when`` / condition API."""

from __future__ import annotations

import pytest

from canon.gates.contracts import Contract, Step, load_contract, must_include_steps, validate, when


def _gated(condition_yaml: str) -> Contract:
    return load_contract(
        "name: gated\nconstraints:\n  - type: must_include_steps\n    steps: [lookup]\n"
        "    when:\n" + "\n".join(f"      {line}" for line in condition_yaml.splitlines())
    )


def _status(contract: Contract, execution) -> str:  # type: ignore[no-untyped-def]
    return validate(contract, execution).status


def test_a_skipped_constraint_passes_and_is_listed_as_skipped(make_execution):
    contract = _gated("input_matches: refund")
    verdict = validate(contract, make_execution("other"))
    assert verdict.status == "pass"
    assert verdict.skipped == (0,)
    assert verdict.checks_passed == 1


def test_input_matches_is_a_case_insensitive_search(make_execution):
    contract = _gated("input_matches: 'PHARMACY claim'")
    assert _status(contract, make_execution("other")) == "fail"
    assert _status(contract, make_execution("other", request="a dental claim")) == "pass"
    assert _status(contract, make_execution("other", request=None)) == "pass"


def test_step_present_accepts_a_name_or_a_list(make_execution):
    single = _gated("step_present: check_coverage")
    several = _gated("step_present: [x, check_coverage]")
    execution = make_execution("check_coverage")
    assert _status(single, execution) == "fail"
    assert _status(several, execution) == "fail"
    assert _status(single, make_execution("y")) == "pass"
    assert "step present: ['check_coverage']" in single.constraints[0].name


def test_metadata_uses_typed_equality(make_execution):
    contract = _gated("metadata:\n  tier: 1\n  vip: true")
    assert _status(contract, make_execution("x", metadata={"tier": 1, "vip": True})) == "fail"
    assert _status(contract, make_execution("x", metadata={"tier": "1", "vip": True})) == "pass"
    assert _status(contract, make_execution("x", metadata={"tier": 1, "vip": 1})) == "pass"


def test_metadata_operators_compare_numbers_and_numeric_strings(make_execution):
    contract = _gated("metadata:\n  risk_score: {gte: 70}")
    for value, expected in [
        (85, "fail"),
        ("85", "fail"),
        (70.0, "fail"),
        (69, "pass"),
        ("high", "pass"),
        (None, "pass"),
        (True, "pass"),
    ]:
        execution = make_execution("x", metadata={"risk_score": value})
        assert _status(contract, execution) == expected, value


def test_tool_result_matches_reads_a_tools_parsed_result(make_execution):
    contract = _gated(
        "tool_result_matches:\n  tool: check_coverage\n  key: coverage_active\n  value: true"
    )
    active = Step("check_coverage", "tool_call", status="ok", outputs={"coverage_active": True})
    text = Step("check_coverage", "tool_call", status="ok", outputs='{"coverage_active": true}')
    wrong_type = Step(
        "check_coverage", "tool_call", status="ok", outputs={"coverage_active": "true"}
    )
    other_tool = Step("other", "tool_call", status="ok", outputs={"coverage_active": True})
    assert _status(contract, make_execution(active)) == "fail"
    assert _status(contract, make_execution(text)) == "fail"
    assert _status(contract, make_execution(wrong_type)) == "pass"
    assert _status(contract, make_execution(other_tool)) == "pass"
    assert "check_coverage.coverage_active==true" in contract.constraints[0].name


def test_conditions_are_anded(make_execution):
    contract = _gated("input_matches: claim\nstep_present: audit")
    assert _status(contract, make_execution("audit", request="no")) == "pass"
    assert _status(contract, make_execution("audit", request="claim")) == "fail"


def test_any_of_holds_when_one_option_holds(make_execution):
    contract = _gated("any_of:\n  - input_matches: refund\n  - step_present: audit")
    assert _status(contract, make_execution("audit", request="no")) == "fail"
    assert _status(contract, make_execution("x", request="no")) == "pass"


def test_condition_description_has_a_fixed_part_order():
    contract = _gated(
        "tool_result_matches: {tool: t, key: k, value: 1}\nstep_present: s\n"
        "input_matches: x\nmetadata: {a: 1}"
    )
    assert contract.constraints[0].name == (
        "when(metadata.a=1 AND input matches /x/ AND step present: ['s'] AND t.k==1): "
        "must_include_steps(['lookup'])"
    )


def test_violation_of_a_gated_constraint_carries_the_full_when_name(make_execution):
    verdict = validate(_gated("input_matches: claim"), make_execution("x"))
    [violation] = verdict.violations
    assert violation.name.startswith("when(input matches /claim/): must_include_steps")


def test_python_when_accepts_a_callable(make_execution):
    contract = Contract(
        "py", "1", (when(lambda e: "urgent" in (e.input_text or ""), must_include_steps(["a"])),)
    )
    assert contract.constraints[0].name == "when(custom condition): must_include_steps(['a'])"
    assert _status(contract, make_execution("x", request="urgent!")) == "fail"
    assert _status(contract, make_execution("x", request="later")) == "pass"


def test_python_when_accepts_a_metadata_dict_with_a_readable_name(make_execution):
    rule = when({"claim_type": "dental"}, must_include_steps(["a"]), description="")
    assert rule.name == "when(claim_type=dental): must_include_steps(['a'])"
    contract = Contract("py", "1", (rule,))
    assert _status(contract, make_execution("x", metadata={"claim_type": "dental"})) == "fail"


def test_python_when_takes_a_custom_description():
    rule = when(lambda e: True, must_include_steps(["a"]), "always")
    assert rule.name == "when(always): must_include_steps(['a'])"


def test_when_rejects_something_that_is_not_a_condition():
    with pytest.raises(Exception, match="callable"):
        when(42, must_include_steps(["a"]))  # type: ignore[arg-type]
