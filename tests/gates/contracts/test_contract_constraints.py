"""Each constraint type: when it passes, when it fails, and what evidence it gives."""

from __future__ import annotations

import pytest

from canon.gates.contracts import (
    Contract,
    ContractError,
    DataSource,
    Step,
    must_contain_citations,
    must_escalate_when,
    must_include_steps,
    must_not_include_steps,
    must_not_use_only_parametric_knowledge,
    must_precede,
    must_retrieve_from,
    validate,
)
from canon.gates.contracts.loader import merge_source_maps


def _contract(*constraints, source_map=None):  # type: ignore[no-untyped-def]
    return Contract("t", "1", tuple(constraints), source_map or {})


def test_must_retrieve_from_passes_when_a_mapped_tool_ran(make_execution):
    contract = _contract(
        must_retrieve_from(["formulary-db"]),
        source_map={"lookup": DataSource("formulary-db", "database")},
    )
    assert validate(contract, make_execution("lookup")).status == "pass"


def test_must_retrieve_from_reports_required_consulted_and_missing(make_execution, kb_step):
    contract = _contract(must_retrieve_from(["kb-1", "formulary-db"]))
    verdict = validate(contract, make_execution(kb_step("search", "kb-1")))
    [violation] = verdict.violations
    assert verdict.status == "fail"
    assert violation.name == "must_retrieve_from(['kb-1', 'formulary-db'])"
    assert violation.index == 0
    assert dict(violation.evidence) == {
        "required": ["kb-1", "formulary-db"],
        "consulted": ["kb-1"],
        "missing": ["formulary-db"],
    }


def test_source_map_argument_overrides_the_contracts_own_map(make_execution):
    contract = _contract(
        must_retrieve_from(["db"]), source_map={"other": DataSource("db", "database")}
    )
    execution = make_execution("lookup")
    assert validate(contract, execution).status == "fail"
    override = {"lookup": DataSource("db", "database")}
    assert validate(contract, execution, source_map=override).status == "pass"


def test_source_map_argument_is_laid_over_the_contracts_own_map_not_swapped_for_it(
    make_execution,
):
    own = {"lookup": DataSource("db", "database"), "search": DataSource("kb", "knowledge_base")}
    contract = _contract(must_retrieve_from(["db", "kb", "api"]), source_map=own)
    execution = make_execution("lookup", "search", "fetch")
    assert validate(contract, execution).status == "fail"
    extra = {"fetch": DataSource("api", "api")}
    assert validate(contract, execution, source_map=extra).status == "pass"
    # on a clash the argument wins
    clash = {"lookup": DataSource("elsewhere", "database"), **extra}
    [violation] = validate(contract, execution, source_map=clash).violations
    assert violation.evidence["missing"] == ["db"]


def test_merge_source_maps_names_only_the_tools_mapped_differently():
    own = {"a": DataSource("x", "db"), "b": DataSource("y", "db")}
    given = {"a": DataSource("x", "db"), "b": DataSource("z", "api"), "c": DataSource("w", "db")}
    merged, clashes = merge_source_maps(own, given)
    assert merged == {"a": own["a"], "b": given["b"], "c": given["c"]}
    assert clashes == ("b",)
    assert own == {"a": DataSource("x", "db"), "b": DataSource("y", "db")}  # not mutated


def test_an_errored_step_does_not_count_as_consulting_its_source(make_execution):
    contract = _contract(
        must_retrieve_from(["db"]), source_map={"lookup": DataSource("db", "database")}
    )
    failed = Step(name="lookup", kind="tool_call", status="error")
    assert validate(contract, make_execution(failed)).status == "fail"


def test_parametric_only_fails_without_tools_and_lists_step_types(make_execution):
    verdict = validate(
        _contract(must_not_use_only_parametric_knowledge()),
        make_execution(("chat", "model_call"), ("agent", "agent")),
    )
    [violation] = verdict.violations
    assert violation.name == "must_not_use_only_parametric_knowledge"
    assert violation.evidence == {"step_types": ["model_call", "agent"]}


def test_parametric_only_passes_on_a_retrieval_step(make_execution, kb_step):
    contract = _contract(must_not_use_only_parametric_knowledge())
    assert validate(contract, make_execution(kb_step("kb", "x"))).status == "pass"


def test_parametric_only_ignores_tool_calls_that_ended_in_error(make_execution):
    contract = _contract(must_not_use_only_parametric_knowledge())
    failed = Step(name="lookup", kind="tool_call", status="error")
    assert validate(contract, make_execution(failed)).status == "fail"


def test_must_include_steps_reports_missing_in_contract_order(make_execution):
    verdict = validate(_contract(must_include_steps(["c", "a", "z"])), make_execution("a", "b"))
    [violation] = verdict.violations
    assert violation.name == "must_include_steps(['c', 'a', 'z'])"
    assert violation.evidence == {
        "required": ["c", "a", "z"],
        "present": ["a", "b"],
        "missing": ["c", "z"],
    }


def test_must_include_steps_says_when_a_required_step_failed(make_execution):
    failed = Step(name="check", kind="tool_call", status="error")
    verdict = validate(_contract(must_include_steps(["check"])), make_execution(failed))
    [violation] = verdict.violations
    assert violation.evidence["failed"] == ["check"]
    assert "ended in error" in violation.message


def test_must_not_include_steps_finds_forbidden_steps_even_failed_ones(make_execution):
    failed = Step(name="delete_all", kind="tool_call", status="error")
    verdict = validate(
        _contract(must_not_include_steps(["delete_all", "drop"])), make_execution("a", failed)
    )
    [violation] = verdict.violations
    assert violation.name == "must_not_include_steps(['delete_all', 'drop'])"
    assert violation.evidence == {
        "forbidden": ["delete_all", "drop"],
        "found": ["delete_all"],
        "steps": ["a", "delete_all"],
    }


def test_must_not_include_steps_passes_when_absent(make_execution):
    assert validate(_contract(must_not_include_steps(["x"])), make_execution("a")).status == "pass"


def test_must_precede_passes_in_order_and_fails_out_of_order(make_execution):
    contract = _contract(must_precede("check", "decide"))
    assert validate(contract, make_execution("check", "decide")).status == "pass"
    verdict = validate(contract, make_execution("decide", "check"))
    [violation] = verdict.violations
    assert violation.name == "must_precede(check, decide)"
    assert violation.evidence == {
        "expected_before": "check",
        "expected_after": "decide",
        "actual_order": ["decide", "check"],
    }


def test_must_precede_uses_first_occurrences(make_execution):
    contract = _contract(must_precede("check", "decide"))
    assert validate(contract, make_execution("check", "decide", "check")).status == "pass"


def test_must_precede_is_vacuous_when_neither_step_ran(make_execution):
    assert validate(_contract(must_precede("a", "b")), make_execution("x")).status == "pass"


def test_must_precede_fails_when_after_ran_without_before(make_execution):
    verdict = validate(_contract(must_precede("a", "b")), make_execution("b"))
    [violation] = verdict.violations
    assert violation.evidence == {"expected_before": "a", "steps": ["b"]}


def test_must_precede_passes_when_only_before_ran(make_execution):
    assert validate(_contract(must_precede("a", "b")), make_execution("a")).status == "pass"


def test_must_precede_refuses_a_step_preceding_itself():
    with pytest.raises(ContractError, match="cannot precede itself"):
        must_precede("a", "a")


def test_citations_count_distinct_citations(make_execution):
    contract = _contract(must_contain_citations(2))
    verdict = validate(contract, make_execution(output="See [1] and [1] again."))
    [violation] = verdict.violations
    assert violation.name == "output_must_contain_citations(min=2)"
    assert violation.evidence["found_citations"] == ["[1]"]
    assert violation.evidence["min_required"] == 2
    ok = make_execution(output="Per Section 4.2 and 31 CFR 1010.230.")
    assert validate(contract, ok).status == "pass"


def test_citations_fail_without_output_text(make_execution):
    verdict = validate(_contract(must_contain_citations()), make_execution(output=None))
    assert verdict.violations[0].evidence == {"output_text": None, "min_required": 1}


def test_citations_with_min_count_zero_always_pass(make_execution):
    assert (
        validate(_contract(must_contain_citations(0)), make_execution(output=None)).status == "pass"
    )


def test_prose_is_not_taken_for_a_citation(make_execution):
    text = "The policy is clear. Part 2 of the start 5 plan."
    verdict = validate(_contract(must_contain_citations()), make_execution(output=text))
    assert verdict.violations[0].evidence["found_citations"] == []


def test_escalation_required_when_condition_holds_and_no_marker_ran(make_execution):
    rule = must_escalate_when(lambda e: e.metadata.get("risk") == "high", "high risk")
    verdict = validate(_contract(rule), make_execution("screen", metadata={"risk": "high"}))
    [violation] = verdict.violations
    assert violation.name == "must_escalate_when(high risk)"
    assert violation.evidence == {
        "condition": "high risk",
        "escalation_markers_checked": ["flag_for_human_review", "escalate", "human_review"],
        "steps_found": ["screen"],
    }


def test_escalation_satisfied_by_a_marker_step_or_a_human_review_step(make_execution):
    rule = must_escalate_when(lambda e: True, "always")
    assert validate(_contract(rule), make_execution("escalate")).status == "pass"
    human = Step(name="review by nurse", kind="human_review", status="ok")
    assert validate(_contract(rule), make_execution(human)).status == "pass"


def test_escalation_uses_custom_markers_and_is_quiet_when_condition_is_false(make_execution):
    rule = must_escalate_when(lambda e: True, "always", escalation_markers=["page_oncall"])
    assert validate(_contract(rule), make_execution("escalate")).status == "fail"
    assert validate(_contract(rule), make_execution("page_oncall")).status == "pass"
    quiet = must_escalate_when(lambda e: False, "never")
    assert validate(_contract(quiet), make_execution("x")).status == "pass"


def test_escalation_markers_may_not_be_empty():
    with pytest.raises(ContractError, match="escalation_markers"):
        must_escalate_when(lambda e: True, "x", escalation_markers=[])


def test_warning_severity_makes_the_verdict_warn(make_execution):
    verdict = validate(
        _contract(must_include_steps(["x"], severity="warning")), make_execution("a")
    )
    assert verdict.status == "warn"
    assert verdict.violations[0].severity == "warning"


def test_one_error_among_warnings_makes_the_verdict_fail(make_execution):
    contract = _contract(must_include_steps(["x"], severity="warning"), must_include_steps(["y"]))
    verdict = validate(contract, make_execution("a"))
    assert verdict.status == "fail"
    assert [v.index for v in verdict.violations] == [0, 1]
    assert verdict.checks_performed == 2 and verdict.checks_passed == 0


@pytest.mark.parametrize("severity", ["critical", "Warning", "ERROR", "warn", None])
def test_unknown_severities_are_refused(severity):
    with pytest.raises(ContractError, match="severity"):
        must_include_steps(["a"], severity=severity)


def test_a_bare_string_in_the_python_api_is_one_step_name(make_execution):
    assert must_include_steps("lookup").steps == ("lookup",)


def test_a_contract_without_constraints_is_refused():
    with pytest.raises(ContractError, match="no constraints"):
        Contract("empty", "1", ())
