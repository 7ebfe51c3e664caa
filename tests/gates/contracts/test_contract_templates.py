"""The bundled domain templates against matching and violating traces from the corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from canon.gates.contracts import (
    TEMPLATE_NAMES,
    Step,
    list_templates,
    load_template,
    normalize_trace,
    parse_trace_text,
    validate,
)
from canon.gates.contracts.errors import ContractError

PAIRS = [
    ("claims-processing-v1", "valid_claim", "invalid_claim"),
    ("kyc-aml-screening-v1", "kyc_valid", "kyc_invalid"),
    ("clinical-decision-support-v1", "clinical_valid", "clinical_invalid"),
]


def _execution(path: Path, metadata=None, text=None):  # type: ignore[no-untyped-def]
    raw = parse_trace_text(text if text is not None else path.read_text(), source=str(path))
    return normalize_trace(raw, metadata=metadata, source=str(path))


def test_three_templates_are_bundled_with_their_constraint_counts():
    assert TEMPLATE_NAMES == (
        "claims-processing-v1",
        "clinical-decision-support-v1",
        "kyc-aml-screening-v1",
    )
    counts = {t.name: len(t.constraints) for t in list_templates()}
    assert counts == {
        "claims-processing-v1": 6,
        "clinical-decision-support-v1": 7,
        "kyc-aml-screening-v1": 7,
    }


def test_an_unknown_template_name_is_a_contract_error():
    with pytest.raises(ContractError, match="available"):
        load_template("nope")


@pytest.mark.parametrize(("template", "valid", "invalid"), PAIRS)
def test_template_passes_its_valid_example_and_fails_its_invalid_one(
    corpus_dir, template, valid, invalid
):
    contract = load_template(template)
    good = validate(contract, _execution(corpus_dir / "abc-examples" / f"{valid}.json"))
    bad = validate(contract, _execution(corpus_dir / "abc-examples" / f"{invalid}.json"))
    assert good.status == "pass", good.violations
    assert bad.status == "fail"
    names = {v.name for v in bad.violations}
    assert "must_not_use_only_parametric_knowledge" in names
    assert any(name.startswith("must_retrieve_from") for name in names)


@pytest.mark.parametrize(
    ("claim_type", "expected"),
    [("pharmacy", "pass"), (" Dental ", "pass"), ("veterinary", "fail"), (5, "fail"), ("", "pass")],
)
def test_claims_template_escalates_unknown_claim_types_without_crashing(
    corpus_dir, claim_type, expected
):
    execution = _execution(
        corpus_dir / "abc-examples" / "valid_claim.json", metadata={"claim_type": claim_type}
    )
    verdict = validate(load_template("claims-processing-v1"), execution)
    assert verdict.status == expected
    if expected == "fail":
        assert verdict.violations[-1].name == (
            "must_escalate_when(claim_type not in trained categories)"
        )


@pytest.mark.parametrize(
    ("risk_score", "expected"),
    [
        (85, "fail"),
        ("85", "fail"),
        (70.5, "fail"),
        (69, "pass"),
        ("high", "fail"),  # present but not a number: cannot be shown low, so it escalates
        ("  ", "pass"),
        (None, "pass"),
    ],
)
def test_kyc_template_escalates_high_risk_scores_of_any_type(corpus_dir, risk_score, expected):
    metadata = {} if risk_score is None else {"risk_score": risk_score}
    execution = _execution(corpus_dir / "abc-examples" / "kyc_valid.json", metadata=metadata)
    assert validate(load_template("kyc-aml-screening-v1"), execution).status == expected


@pytest.mark.parametrize(
    ("score", "expected"), [("25", "pass"), ("69", "pass"), ("70", "fail"), ('"high"', "fail")]
)
def test_kyc_template_escalates_on_the_risk_tools_own_score(corpus_dir, score, expected):
    path = corpus_dir / "abc-examples" / "kyc_valid.json"
    original = path.read_text()
    needle = '\\"score\\": 25'
    assert needle in original
    text = original.replace(needle, f'\\"score\\": {score.replace(chr(34), chr(92) + chr(34))}')
    execution = _execution(path, text=text)
    risk = next(s for s in execution.steps if s.name == "assess_risk")
    assert risk.outputs["score"] == json.loads(score)
    verdict = validate(load_template("kyc-aml-screening-v1"), execution)
    assert verdict.status == expected
    if expected == "fail":
        assert verdict.violations[-1].name.startswith("must_escalate_when(")


def test_kyc_template_is_satisfied_by_an_escalation_step(corpus_dir):
    execution = _execution(
        corpus_dir / "abc-examples" / "kyc_valid.json", metadata={"risk_score": 90}
    )
    escalated = execution.__class__(
        execution_id=execution.execution_id,
        steps=(*execution.steps, Step("flag_for_human_review", "tool_call", status="ok")),
        input_text=execution.input_text,
        output_text=execution.output_text,
        metadata=execution.metadata,
    )
    assert validate(load_template("kyc-aml-screening-v1"), escalated).status == "pass"


@pytest.mark.parametrize(
    ("replacement", "expected"),
    [
        ('\\"interaction_found\\": true', "fail"),
        ('\\"interaction_found\\": false, \\"interaction_severity\\": \\"major\\"', "fail"),
        ('\\"interaction_found\\": false', "pass"),
    ],
)
def test_clinical_template_escalates_serious_interactions_found_by_a_tool(
    corpus_dir, replacement, expected
):
    path = corpus_dir / "abc-examples" / "clinical_valid.json"
    original = path.read_text()
    needle = '\\"interaction_found\\": false, \\"interaction_severity\\": \\"none\\"'
    assert needle in original
    text = original.replace(needle, replacement)
    json.loads(text)  # the edited trace is still valid JSON
    verdict = validate(load_template("clinical-decision-support-v1"), _execution(path, text=text))
    assert verdict.status == expected


def test_templates_that_mean_more_than_the_reference_carry_a_new_version_and_say_why():
    by_name = {t.name: t for t in list_templates()}
    # claims reads every input the reference read the same way, so it keeps 1.0.0
    assert {name: t.version for name, t in by_name.items()} == {
        "claims-processing-v1": "1.0.0",
        "clinical-decision-support-v1": "1.1.0",
        "kyc-aml-screening-v1": "1.1.0",
    }
    kyc = by_name["kyc-aml-screening-v1"].description
    assert "Changed in 1.1.0" in kyc and "assess_risk" in kyc and "NaN" in kyc
    clinical = by_name["clinical-decision-support-v1"].description
    assert "Changed in 1.1.0" in clinical and "Major" in clinical


def test_clinical_template_matches_the_severity_in_any_case(corpus_dir):
    path = corpus_dir / "abc-examples" / "clinical_valid.json"
    original = path.read_text()
    needle = '\\"interaction_severity\\": \\"none\\"'
    assert needle in original
    text = original.replace(needle, '\\"interaction_severity\\": \\" Major \\"')
    verdict = validate(load_template("clinical-decision-support-v1"), _execution(path, text=text))
    assert verdict.status == "fail"
    assert verdict.contract_version == "1.1.0"
