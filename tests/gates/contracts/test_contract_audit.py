"""Audit records, the text audit report, and the gate outcome for CoherenceMetric."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from canon.gates.contracts import (
    Contract,
    Step,
    contract_outcome,
    create_audit_record,
    load_template,
    must_contain_citations,
    must_include_steps,
    render_audit_report,
    validate,
    when,
)


def _verdict_and_execution(make_execution):  # type: ignore[no-untyped-def]
    contract = Contract(
        "audit-me",
        "3.1",
        (
            must_include_steps(["lookup"]),
            must_include_steps(["missing_step"], severity="warning"),
            when(lambda e: False, must_contain_citations()),
        ),
    )
    execution = make_execution(
        Step(
            "lookup",
            "tool_call",
            status="ok",
            start_ns=1_700_000_000_000_000_000,
            end_ns=1_700_000_001_000_000_000,
        ),
        Step("broken", "tool_call", status="error"),
        output="x" * 500,
    )
    return validate(contract, execution), execution


def test_audit_record_holds_verdict_checklist_and_execution_summary(make_execution):
    verdict, execution = _verdict_and_execution(make_execution)
    record = create_audit_record(
        verdict,
        execution,
        trace="t.json",
        audit_id="id-1",
        timestamp=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
    )
    data = json.loads(json.dumps(record.to_dict()))
    assert data["audit_id"] == "id-1" and data["timestamp"] == "2026-01-02T03:04:05Z"
    assert data["contract_name"] == "audit-me" and data["contract_version"] == "3.1"
    assert data["verdict"]["status"] == "warn"
    assert [entry["outcome"] for entry in data["evidence_package"]] == [
        "passed",
        "violated",
        "skipped",
    ]
    assert data["evidence_package"][1]["evidence"]["missing"] == ["missing_step"]
    summary = data["execution_summary"]
    assert summary["tool_calls"] == ["lookup", "broken"]
    assert summary["failed_steps"] == ["broken"]
    assert summary["started_at"] == "2023-11-14T22:13:20.000Z"
    assert len(summary["output_preview"]) == 200


def test_audit_records_get_fresh_ids_and_times_by_default(make_execution):
    verdict, execution = _verdict_and_execution(make_execution)
    first = create_audit_record(verdict, execution)
    second = create_audit_record(verdict, execution)
    assert first.audit_id != second.audit_id
    assert first.timestamp.endswith("Z")


def test_audit_report_renders_from_the_record_and_from_its_json(make_execution):
    verdict, execution = _verdict_and_execution(make_execution)
    record = create_audit_record(verdict, execution, audit_id="id-9")
    text = render_audit_report(record)
    assert text == render_audit_report(json.loads(json.dumps(record.to_dict())))
    assert "Contract:  audit-me v3.1" in text
    assert "Verdict:   WARN" in text
    assert "#1 [WARNING] must_include_steps(['missing_step'])" in text
    assert "missing: ['missing_step']" in text
    assert "Failed steps: broken" in text
    assert all(len(line) <= 100 for line in text.splitlines() if not line.startswith("      "))


def test_contract_outcome_maps_fail_warn_and_pass(make_execution):
    contract = Contract("o", "1", (must_include_steps(["a"]),))
    failed = contract_outcome(contract, make_execution("b"))
    assert failed.gate == "contract" and failed.status == "fail" and failed.stops
    assert "constraint #0 must_include_steps(['a']) (error)" in failed.reasons[0]
    warning = Contract("o", "1", (must_include_steps(["a"], severity="warning"),))
    assert contract_outcome(warning, make_execution("b")).status == "warn"
    passed = contract_outcome(contract, make_execution("a"))
    assert passed.status == "pass" and passed.reasons == ()


def test_contract_outcome_normalizes_a_raw_trace_and_overlays_metadata(corpus_dir):
    raw = json.loads((corpus_dir / "abc-examples" / "kyc_valid.json").read_text())
    contract = load_template("kyc-aml-screening-v1")
    assert contract_outcome(contract, raw).status == "pass"
    outcome = contract_outcome(contract, raw, metadata={"risk_score": 99})
    assert outcome.status == "fail"
    assert "risk_score >= 70" in outcome.reasons[0]
