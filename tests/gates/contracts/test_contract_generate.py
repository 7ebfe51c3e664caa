"""Generating a contract from a golden execution, and replaying it on that execution."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from canon.gates.contracts import (
    ContractError,
    DataSource,
    Step,
    dump_contract,
    generate_contract,
    load_contract,
    normalize_trace,
    parse_trace_text,
    validate,
)

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "traces"
CORPUS_FILES = sorted(CORPUS.rglob("*.json"))


def test_repeated_tools_are_listed_once_and_ordered_by_first_occurrence(make_execution):
    execution = make_execution("search", "fetch", "search", "fetch", "answer", "search")
    contract = generate_contract(execution, name="g")
    names = [c.name for c in contract.constraints]
    assert names == [
        "must_not_use_only_parametric_knowledge",
        "must_include_steps(['search', 'fetch', 'answer'])",
        "must_precede(search, fetch)",
        "must_precede(fetch, answer)",
        "output_must_contain_citations(min=1)",
    ]
    assert validate(contract, execution).status == "pass"


def test_sources_from_the_trace_and_the_source_map_become_must_retrieve_from(
    make_execution, kb_step
):
    execution = make_execution(kb_step("kb_search", "kb-7"), "lookup", output="no refs")
    source_map = {"lookup": DataSource("formulary-db", "database")}
    contract = generate_contract(execution, name="g", source_map=source_map)
    assert contract.constraints[0].name == "must_retrieve_from(['formulary-db', 'kb-7'])"
    assert contract.source_map == source_map
    assert not any("citations" in c.name for c in contract.constraints)
    assert validate(contract, execution).status == "pass"


def test_a_tool_less_execution_still_gets_a_constraint(make_execution):
    execution = make_execution(("chat", "model_call"), output="plain")
    contract = generate_contract(execution, name="g")
    assert [c.name for c in contract.constraints] == ["must_include_steps(['chat'])"]


def test_an_execution_with_no_successful_step_cannot_seed_a_contract(make_execution):
    failed = Step(name="chat", kind="model_call", status="error")
    with pytest.raises(ContractError, match="no successful step"):
        generate_contract(make_execution(failed, output=None), name="g")


def test_failed_tool_attempts_are_left_out_of_the_generated_steps(make_execution):
    failed = Step(name="lookup", kind="tool_call", status="error")
    execution = make_execution(failed, "check", output=None)
    contract = generate_contract(execution, name="g")
    assert "must_include_steps(['check'])" in [c.name for c in contract.constraints]
    assert validate(contract, execution).status == "pass"


def test_awkward_names_survive_the_yaml_round_trip(make_execution):
    execution = make_execution("yes", "null", "1.0", "a: b", "#x", output=None)
    text = dump_contract(generate_contract(execution, name="on", version="1.0"))
    reloaded = load_contract(text)
    assert reloaded.name == "on" and reloaded.version == "1.0"
    assert reloaded.constraints[1].steps == ("yes", "null", "1.0", "a: b", "#x")
    assert validate(reloaded, execution).status == "pass"


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_generated_contract_passes_its_own_golden_corpus_trace(path):
    execution = normalize_trace(parse_trace_text(path.read_text(), source=str(path)))
    generated = generate_contract(execution, name=f"golden-{path.stem}")
    text = dump_contract(generated)
    assert isinstance(yaml.safe_load(text), dict)
    reloaded = load_contract(text, origin=str(path))
    assert reloaded.constraints
    assert validate(reloaded, execution).status == "pass"
