"""The constraint-kind registry: one module and one line per kind, and the docs kept to it."""

from __future__ import annotations

from pathlib import Path

import pytest

from canon.gates.contracts import (
    CONSTRAINT_TYPES,
    ContractError,
    dump_contract,
    load_contract,
    validate,
)
from canon.gates.contracts.kinds import KINDS, by_type, kinds_table
from canon.gates.contracts.kinds.must_precede import KIND as MUST_PRECEDE

DOCS = Path(__file__).resolve().parents[3] / "docs"


def test_the_docs_table_of_kinds_is_the_registrys():
    text = (DOCS / "contracts.md").read_text(encoding="utf-8")
    assert kinds_table() in text
    assert tuple(kind.type for kind in KINDS) == CONSTRAINT_TYPES


def test_an_unknown_type_lists_every_registered_kind():
    with pytest.raises(ContractError) as caught:
        load_contract({"constraints": [{"type": "must_be_nice"}]})
    assert "unknown constraint type 'must_be_nice'; expected one of " in str(caught.value)
    assert ", ".join(CONSTRAINT_TYPES) in str(caught.value)


def test_the_registry_refuses_two_kinds_of_one_type_or_one_class():
    with pytest.raises(ValueError, match="two constraint kinds are registered as 'must_precede'"):
        by_type((*KINDS, MUST_PRECEDE))
    twin = MUST_PRECEDE.__class__(**{**_fields(MUST_PRECEDE), "type": "must_precede_too"})
    with pytest.raises(ValueError, match="share the class MustPrecede"):
        by_type((*KINDS, twin))


def _fields(kind: object) -> dict[str, object]:
    return {name: getattr(kind, name) for name in kind.__slots__}  # type: ignore[attr-defined]


def test_the_worked_example_in_the_docs_loads_checks_and_dumps(doc_example, make_execution):
    example = doc_example("Adding a constraint kind")
    kinds = (*KINDS, example.KIND)
    text = "name: budget\nconstraints:\n  - {type: max_tool_calls, limit: 2, severity: warning}\n"
    contract = load_contract(text, kinds=kinds)
    assert contract.constraint_names == ("max_tool_calls(2)",)
    assert validate(contract, make_execution("a", "b")).status == "pass"
    verdict = validate(contract, make_execution("a", "b", "c"))
    assert verdict.status == "warn"
    assert verdict.violations[0].message == "3 tool calls, at most 2 allowed"
    assert verdict.violations[0].evidence == {"tool_calls": 3, "limit": 2}
    dumped = dump_contract(contract, kinds=kinds)
    assert "type: max_tool_calls" in dumped and "limit: 2" in dumped
    assert load_contract(dumped, kinds=kinds) == contract
    # its keys are checked like a built-in kind's, and its row is in the table
    with pytest.raises(ContractError, match=r"constraints\[0\] \(max_tool_calls\): unknown key"):
        load_contract(
            {"constraints": [{"type": "max_tool_calls", "limit": 1, "max": 2}]}, kinds=kinds
        )
    with pytest.raises(ContractError, match="limit: expected an integer, 0 or more"):
        load_contract({"constraints": [{"type": "max_tool_calls", "limit": -1}]}, kinds=kinds)
    assert "| `max_tool_calls` | `limit` |" in kinds_table(kinds)
    # not registered: the built-in table does not read it
    with pytest.raises(ContractError, match="unknown constraint type 'max_tool_calls'"):
        load_contract(text)


def test_a_kind_without_a_yaml_form_is_refused_by_dump_naming_it(make_execution):
    contract = load_contract(
        {
            "constraints": [
                {
                    "type": "must_escalate_when",
                    "condition": {"step_present": "x"},
                    "description": "x ran",
                }
            ]
        }
    )
    with pytest.raises(ContractError, match=r"must_escalate_when\(x ran\) cannot be written"):
        dump_contract(contract)
