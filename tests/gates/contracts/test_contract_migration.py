"""Contracts written for the reference package load with the reference's meaning."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from canon.gates.contracts import Execution, Step, load_contract, validate
from canon.gates.contracts.constraints import DEFAULT_ESCALATION_MARKERS, MustEscalateWhen, When
from canon.gates.contracts.errors import ContractError

Build = Callable[..., Execution]


def test_null_escalation_markers_mean_the_default_markers(make_execution: Build) -> None:
    contract = load_contract(
        """
name: c
version: "1"
constraints:
  - type: must_escalate_when
    condition: {metadata: {risk: high}}
    description: high risk
    escalation_markers: null
"""
    )
    rule = contract.constraints[0]
    assert isinstance(rule, MustEscalateWhen)
    assert rule.escalation_markers == DEFAULT_ESCALATION_MARKERS
    risky = make_execution("lookup", metadata={"risk": "high"})
    assert validate(contract, risky).status == "fail"
    escalated = make_execution("lookup", "escalate", metadata={"risk": "high"})
    assert validate(contract, escalated).status == "pass"


def _tool_result_contract(value: str) -> str:
    return f"""
name: c
version: "1"
constraints:
  - type: must_include_steps
    steps: [approve]
    when:
      tool_result_matches: {{tool: screen, key: hits, value: {value}}}
"""


def _screened(hits: object) -> Step:
    return Step("screen", "tool_call", status="ok", outputs={"hits": hits})


@pytest.mark.parametrize(
    ("hits", "applies"),
    [(["OFAC", "EU"], True), (["EU", "OFAC"], False), (["OFAC"], False), ("OFAC", False)],
)
def test_a_list_value_means_exact_list_equality(
    make_execution: Build, hits: object, applies: bool
) -> None:
    contract = load_contract(_tool_result_contract("[OFAC, EU]"))
    verdict = validate(contract, make_execution(_screened(hits)))
    assert verdict.status == ("fail" if applies else "pass")
    assert (verdict.skipped == (0,)) is not applies


def test_a_list_metadata_value_means_exact_list_equality(make_execution: Build) -> None:
    contract = load_contract(
        """
name: c
version: "1"
constraints:
  - type: must_include_steps
    steps: [review]
    when: {metadata: {flags: [pep, sanctions]}}
"""
    )
    both = make_execution("x", metadata={"flags": ["pep", "sanctions"]})
    assert validate(contract, both).status == "fail"
    assert validate(contract, make_execution("x", metadata={"flags": ["pep"]})).status == "pass"


@pytest.mark.parametrize("when", ["{}", "null"])
def test_an_empty_when_is_unconditional(make_execution: Build, when: str) -> None:
    contract = load_contract(
        f"""
name: c
version: "1"
constraints:
  - type: must_include_steps
    steps: [lookup]
    when: {when}
"""
    )
    assert not isinstance(contract.constraints[0], When)
    assert validate(contract, make_execution("other")).status == "fail"
    assert validate(contract, make_execution("lookup")).status == "pass"


RAW_NAMES = ["lookup_x.tool", "execute_tool lookup_x", "running tool: lookup_x"]


@pytest.mark.parametrize("raw", RAW_NAMES)
def test_a_raw_span_name_matches_the_normalized_tool_step(make_execution: Build, raw: str) -> None:
    contract = load_contract(
        f"""
name: c
version: "1"
constraints:
  - type: must_include_steps
    steps: ["{raw}"]
  - type: must_precede
    before: "{raw}"
    after: decide
  - type: must_include_steps
    steps: [decide]
    when: {{step_present: ["{raw}"]}}
"""
    )
    assert validate(contract, make_execution("lookup_x", "decide")).status == "pass"
    assert validate(contract, make_execution("decide", "lookup_x")).status == "fail"
    assert validate(contract, make_execution("decide")).status == "fail"


def test_a_step_that_must_precede_itself_stays_a_load_error() -> None:
    with pytest.raises(ContractError, match="cannot precede itself"):
        load_contract(
            """
name: c
version: "1"
constraints:
  - type: must_precede
    before: lookup_x.tool
    after: lookup_x
"""
        )


def test_the_numeric_operator_takes_only_true_or_false() -> None:
    with pytest.raises(ContractError, match=r"numeric: expected true or false, got 'no'"):
        load_contract(
            """
name: c
version: "1"
constraints:
  - type: must_include_steps
    steps: [a]
    when: {metadata: {score: {numeric: "no"}}}
"""
        )
