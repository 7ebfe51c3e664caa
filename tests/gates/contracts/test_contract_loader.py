"""Loading contracts strictly: every malformed contract is a clear ContractError."""

from __future__ import annotations

import pytest

from canon.errors import GateError
from canon.gates.contracts import ContractError, load_contract

VALID = """
name: claims
version: "2.1.0"
source_map:
  lookup_formulary: {source_name: formulary-db, source_type: database}
constraints:
  - type: must_retrieve_from
    sources: [formulary-db]
  - type: must_not_use_only_parametric_knowledge
  - type: must_include_steps
    steps: [lookup_formulary]
    severity: warning
  - type: must_not_include_steps
    steps: [delete_claim]
  - type: must_precede
    before: lookup_formulary
    after: render_decision
  - type: must_contain_citations
  - type: must_escalate_when
    description: unknown claim type
    condition:
      metadata:
        claim_type: {not_in: [pharmacy, dental]}
    escalation_markers: [flag_for_human_review]
"""


def test_a_valid_contract_loads_every_constraint_type():
    contract = load_contract(VALID)
    assert contract.name == "claims" and contract.version == "2.1.0"
    assert [c.name for c in contract.constraints] == [
        "must_retrieve_from(['formulary-db'])",
        "must_not_use_only_parametric_knowledge",
        "must_include_steps(['lookup_formulary'])",
        "must_not_include_steps(['delete_claim'])",
        "must_precede(lookup_formulary, render_decision)",
        "output_must_contain_citations(min=1)",
        "must_escalate_when(unknown claim type)",
    ]
    assert contract.constraints[2].severity == "warning"
    assert contract.source_map["lookup_formulary"].name == "formulary-db"


def test_a_mapping_loads_like_yaml_text():
    mapping = {"name": "m", "constraints": [{"type": "must_include_steps", "steps": ["a"]}]}
    assert load_contract(mapping).constraints[0].name == "must_include_steps(['a'])"


def test_a_numeric_version_becomes_text():
    contract = load_contract("version: 1.0\nconstraints: [{type: must_contain_citations}]")
    assert contract.version == "1.0"


def test_contract_error_is_a_gate_error():
    assert issubclass(ContractError, GateError)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "constraints: [{type: must_teleport}]",
            r"constraints\[0\]: unknown constraint type 'must_teleport'",
        ),
        (
            "constraints:\n  - type: must_include_steps\n    steps: [a]\n    severty: warning",
            r"constraints\[0\] \(must_include_steps\): unknown key 'severty'",
        ),
        (
            "constraints: [{type: must_include_steps, steps: lookup}]",
            r"steps: expected a non-empty list",
        ),
        (
            "constraints: [{type: must_retrieve_from, sources: db}]",
            r"sources: expected a non-empty list",
        ),
        ("constraints: [{type: must_include_steps, steps: []}]", r"non-empty list"),
        (
            "constraints: [{type: must_include_steps, steps: [a], severity: critical}]",
            r"unknown severity 'critical'",
        ),
        ("constraints: []", r"constraints: expected a non-empty list"),
        ("constraints:", r"constraints: expected a non-empty list"),
        ("name: x", r"constraints: expected a non-empty list"),
        (
            "constraints: [{type: must_include_steps, steps: [a], when: {sunny: true}}]",
            r"unknown condition 'sunny'",
        ),
        (
            "constraints: [{type: must_include_steps, steps: [a], when: []}]",
            r"when: expected a non-empty mapping",
        ),
        (
            "constraints: [{type: must_include_steps, steps: [a], when: {input_matches: '(['}}]",
            r"invalid regular expression",
        ),
        ("constraints: [{type: must_precede, before: a}]", r"missing required key 'after'"),
        ("constraints: [{type: must_precede, before: a, after: a}]", r"cannot precede itself"),
        ("constraints: [{type: must_contain_citations, min_count: -1}]", r"min_count"),
        ("constraints: [{type: must_contain_citations, min_count: many}]", r"min_count"),
        (
            "constraints: [{type: must_escalate_when, description: d}]",
            r"missing required key 'condition'",
        ),
        (
            "constraints: [{type: must_escalate_when, condition: {step_present: a}}]",
            r"missing required key 'description'",
        ),
        (
            "constraints: [{type: must_escalate_when, description: d, condition: {x: 1}}]",
            r"condition: unknown condition 'x'",
        ),
        (
            "constraints: [{type: must_escalate_when, description: d, "
            "condition: {step_present: a}, escalation_markers: page}]",
            r"escalation_markers",
        ),
        (
            "constraints: [{type: must_include_steps, steps: [a], "
            "when: {tool_result_matches: {tool: t, key: k}}}]",
            r"missing 'value'",
        ),
        (
            "constraints: [{type: must_include_steps, steps: [a], "
            "when: {metadata: {r: {over: 3}}}}]",
            r"unknown operator 'over'",
        ),
        (
            "severity: error\nconstraints: [{type: must_contain_citations}]",
            r"unknown top-level key 'severity'",
        ),
        (
            "source_map: {t: {source: db}}\nconstraints: [{type: must_contain_citations}]",
            r"unknown key 'source'",
        ),
        ("- just\n- a list", r"a contract is a mapping"),
        ("constraints: [must_include_steps]", r"constraints\[0\]: expected a mapping"),
        ("name: [unclosed", r"not valid YAML"),
    ],
)
def test_malformed_contracts_are_refused_with_the_place_and_the_reason(text, expected):
    with pytest.raises(ContractError, match=expected):
        load_contract(text, origin="c.yaml")


def test_errors_name_the_origin_and_the_constraint_index():
    text = VALID.replace("    severity: warning", "    severity: fatal")
    with pytest.raises(ContractError) as caught:
        load_contract(text, origin="claims.yaml")
    message = str(caught.value)
    assert message.startswith("claims.yaml: constraints[2] (must_include_steps).severity")
    assert "expected 'error' or 'warning'" in message


def test_contract_text_with_a_duplicate_key_is_refused_not_silently_replaced():
    text = (
        "name: x\nversion: '1'\nconstraints:\n"
        "  - type: must_include_steps\n    steps: [lookup]\n"
        "constraints: []\n"
    )
    with pytest.raises(ContractError, match="duplicate key 'constraints'"):
        load_contract(text)


def test_every_bundled_template_still_loads_under_the_strict_loader():
    from canon.gates.contracts.templates import list_templates

    templates = list_templates()
    assert len(templates) >= 3 and all(t.constraints for t in templates)
