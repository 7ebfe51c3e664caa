"""NaN and infinite scores never clear a threshold: the gate fails closed on them."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from canon.cli.contract import contract
from canon.gates.contracts import load_contract, load_template, normalize_trace, parse_trace_text
from canon.gates.contracts import validate as validate_contract
from canon.gates.contracts.errors import ContractError
from canon.gates.contracts.values import parse_value_test

KYC_VALID = (
    Path(__file__).resolve().parents[2] / "corpus" / "traces" / "abc-examples" / ("kyc_valid.json")
)
NON_FINITE = [math.nan, math.inf, -math.inf, "NaN", "nan", " Infinity ", "-inf"]
ESCALATION = "must_escalate_when(risk_score >= 70 or not a number)"


def _kyc_status(text: str | None = None, metadata: dict[str, object] | None = None) -> str:
    raw = parse_trace_text(text if text is not None else KYC_VALID.read_text(), source="kyc")
    execution = normalize_trace(raw, metadata=metadata, source="kyc")
    verdict = validate_contract(load_template("kyc-aml-screening-v1"), execution)
    if verdict.status == "fail":
        assert [v.name for v in verdict.violations] == [ESCALATION]
    return verdict.status


@pytest.mark.parametrize("operator", ["gt", "gte", "lt", "lte"])
@pytest.mark.parametrize("value", NON_FINITE, ids=repr)
def test_every_threshold_holds_for_a_score_that_is_no_finite_number(operator, value):
    assert parse_value_test({operator: 70}, "t").matches(value)


@pytest.mark.parametrize("value", NON_FINITE, ids=repr)
def test_a_non_finite_score_is_not_numeric(value):
    assert parse_value_test({"numeric": False}, "t").matches(value)
    assert not parse_value_test({"numeric": True}, "t").matches(value)


def test_finite_scores_still_compare_by_value_and_huge_integers_compare_exactly():
    gte = parse_value_test({"gte": 70}, "t")
    assert [gte.matches(v) for v in (69, 69.99, "69", 70, "70.0", 10**400, -(10**400))] == [
        False,
        False,
        False,
        True,
        True,
        True,
        False,
    ]
    assert parse_value_test({"numeric": True}, "t").matches(10**400)


def test_a_contract_gated_on_a_threshold_alone_applies_its_constraint_to_a_nan_score(
    make_execution,
):
    gated = load_contract(
        "constraints:\n  - type: must_include_steps\n    steps: [review]\n"
        "    when: {metadata: {risk_score: {gte: 70}}}\n"
    )
    nan_run = make_execution("lookup", metadata={"risk_score": math.nan})
    low_run = make_execution("lookup", metadata={"risk_score": 10})
    assert validate_contract(gated, nan_run).status == "fail"
    assert validate_contract(gated, low_run).status == "pass"


@pytest.mark.parametrize("bound", [".nan", ".inf", "-.inf", "'NaN'"])
def test_a_threshold_that_is_no_finite_number_is_refused_when_the_contract_loads(bound):
    text = (
        "constraints:\n  - type: must_include_steps\n    steps: [review]\n"
        f"    when: {{metadata: {{risk_score: {{gte: {bound}}}}}}}\n"
    )
    with pytest.raises(ContractError, match=r"when\.metadata\.risk_score\.gte: expected a finite"):
        load_contract(text, origin="c.yaml")


@pytest.mark.parametrize("score", NON_FINITE, ids=repr)
def test_kyc_template_escalates_a_non_finite_metadata_score(score):
    assert _kyc_status(metadata={"risk_score": 25}) == "pass"
    assert _kyc_status(metadata={"risk_score": score}) == "fail"


@pytest.mark.parametrize("spelled", ["NaN", "Infinity", "-Infinity"])
def test_kyc_template_escalates_an_otlp_double_value_spelled_nan(spelled):
    original = KYC_VALID.read_text()
    needle = '{"key": "service.name", "value": {"stringValue": "kyc-aml-screening-agent"}}'
    assert needle in original
    attribute = json.dumps({"key": "risk_score", "value": {"doubleValue": spelled}})
    text = original.replace(needle, f"{needle}, {attribute}")
    assert _kyc_status(text.replace(spelled, "12.5", 1)) == "pass"
    assert _kyc_status(text) == "fail"


@pytest.mark.parametrize("score", ["NaN", "Infinity", "-Infinity"])
def test_kyc_template_escalates_a_risk_tool_that_returned_a_nan_score(score):
    original = KYC_VALID.read_text()
    needle = '\\"score\\": 25'
    assert needle in original
    # Python's json reads the bare NaN / Infinity a tool may have written
    assert _kyc_status(original.replace(needle, f'\\"score\\": {score}')) == "fail"


def _run(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(contract, list(args), catch_exceptions=False)


@pytest.mark.parametrize("flag", ["risk_score=NaN", "risk_score=-Infinity", "risk_score=1e999"])
def test_the_metadata_flag_with_nan_fails_the_run(flag):
    args = ["run", "--contract", "kyc-aml-screening-v1", "--traces", str(KYC_VALID)]
    low = _run(*args, "--metadata", "risk_score=25", "--fail-on-violation")
    assert low.exit_code == 0, low.output
    result = _run(*args, "--metadata", flag, "--fail-on-violation")
    assert result.exit_code == 1
    assert result.stdout.startswith("FAIL") and ESCALATION in result.stdout


def test_the_metadata_flag_with_nan_fails_a_real_canon_process():
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "canon",
            "contract",
            "run",
            "--contract",
            "kyc-aml-screening-v1",
            "--traces",
            str(KYC_VALID),
            "--metadata",
            "risk_score=NaN",
            "--fail-on-violation",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 1, completed.stderr
    assert ESCALATION in completed.stdout
