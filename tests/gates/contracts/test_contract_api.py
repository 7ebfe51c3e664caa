"""The public facade of canon.gates.contracts, and a whole-corpus run."""

from __future__ import annotations

from pathlib import Path

import canon.gates.contracts as contracts
from canon.errors import InputError
from canon.gates.contracts import (
    Contract,
    load_contract,
    must_not_use_only_parametric_knowledge,
    normalize_trace,
    parse_trace_text,
    validate,
)

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "traces"


def test_all_is_sorted_and_every_name_resolves():
    # ruff's order: CONSTANTS, then Classes, then functions, each alphabetical.
    def ruff_key(name: str) -> tuple[bool, bool, str]:
        return (not name.isupper(), not name[0].isupper(), name)

    assert contracts.__all__ == sorted(contracts.__all__, key=ruff_key)
    for name in contracts.__all__:
        assert getattr(contracts, name) is not None


def test_trace_error_from_the_normalizer_is_an_input_error():
    assert issubclass(contracts.TraceError, InputError)


def test_every_corpus_trace_gets_a_verdict_not_an_error():
    contract = Contract("grounded", "1", (must_not_use_only_parametric_knowledge(),))
    statuses = {}
    for path in sorted(CORPUS.rglob("*.json")):
        execution = normalize_trace(parse_trace_text(path.read_text(), source=str(path)))
        statuses[f"{path.parent.name}/{path.name}"] = validate(contract, execution).status
    assert len(statuses) == 23
    parametric_only = {
        "abc-examples/invalid_claim.json",
        "abc-examples/kyc_invalid.json",
        "abc-examples/clinical_invalid.json",
        "agentic-otel/violation_parametric_only.json",
    }
    for name in parametric_only:
        assert statuses[name] == "fail", name
    assert statuses["agentic-otel/framework_pydantic_ai.json"] == "pass"
    assert statuses["any-agent/LANGCHAIN_trace.json"] == "pass"


def test_a_gated_constraint_fires_on_a_real_framework_tool_result():
    contract = load_contract(
        "constraints:\n  - type: must_include_steps\n    steps: [escalate]\n    when:\n"
        "      tool_result_matches: {tool: check_coverage, key: coverage_active, value: true}\n"
    )
    fired = []
    for name in ("framework_strands", "framework_pydantic_ai", "framework_langchain"):
        path = CORPUS / "agentic-otel" / f"{name}.json"
        verdict = validate(contract, normalize_trace(parse_trace_text(path.read_text())))
        fired.append(verdict.status)
    assert fired == ["fail", "fail", "fail"]
