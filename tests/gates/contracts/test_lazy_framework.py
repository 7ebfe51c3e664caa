"""An execution's framework is only reported, so the normalizer names it when it is read."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

import canon.gates.contracts.otel.normalize as normalize_module
from canon.gates.contracts import Execution, Step, load_contract, normalize_trace, validate
from canon.gates.contracts.audit import summarize_execution

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "traces"


def _generic_trace() -> dict[str, Any]:
    def attr(key: str, value: str) -> dict[str, Any]:
        return {"key": key, "value": {"stringValue": value}}

    spans = [
        {
            "spanId": f"{index + 1:016x}",
            "parentSpanId": "" if index == 0 else f"{1:016x}",
            "name": "execute_tool lookup" if index else "invoke_agent a",
            "startTimeUnixNano": str(1_711_000_000_000_000_000 + index),
            "status": {"code": 1},
            "attributes": [
                attr("gen_ai.operation.name", "execute_tool" if index else "invoke_agent"),
                attr("gen_ai.tool.name", "lookup"),
            ],
        }
        for index in range(3)
    ]
    scope = {"scope": {"name": "acme.telemetry"}, "spans": spans}
    return {"resourceSpans": [{"scopeSpans": [scope]}]}


def _counting_detection(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    found: list[str] = []
    real = normalize_module.framework

    def counting(*args: Any) -> str:
        found.append(real(*args))
        return found[-1]

    monkeypatch.setattr(normalize_module, "framework", counting)
    return found


def test_validation_never_looks_for_the_framework(monkeypatch: pytest.MonkeyPatch) -> None:
    found = _counting_detection(monkeypatch)
    execution = normalize_trace(_generic_trace())
    contract = load_contract(
        "name: c\nversion: '1'\nconstraints:\n  - type: must_include_steps\n    steps: [lookup]\n"
    )
    assert validate(contract, execution).status == "pass"
    assert found == []
    assert execution.framework == "opentelemetry-genai"
    assert execution.framework == "opentelemetry-genai"
    assert found == ["opentelemetry-genai"]  # looked for once, then kept


def test_an_audit_summary_names_the_framework(monkeypatch: pytest.MonkeyPatch) -> None:
    found = _counting_detection(monkeypatch)
    summary = summarize_execution(normalize_trace(_generic_trace()))
    assert summary["framework"] == "opentelemetry-genai" and len(found) == 1


def test_a_detected_execution_equals_one_given_its_framework() -> None:
    steps = (Step("lookup", "tool_call", status="ok"),)
    given = Execution("e1", steps, "ask", "answer", {"k": 1}, framework="strands")
    later = Execution.detecting("e1", steps, "ask", "answer", {"k": 1}, lambda: "strands")
    assert later == given and repr(later) == repr(given)
    other = Execution.detecting("e1", steps, "ask", "answer", {"k": 1}, lambda: "langgraph")
    assert other != given
    assert dataclasses.replace(later, execution_id="e2").framework == "strands"


def test_a_normalized_execution_copies_and_pickles_with_its_framework() -> None:
    raw = json.loads((CORPUS / "abc-examples" / "valid_claim.json").read_text())
    framework = normalize_trace(raw).framework
    for fresh in (normalize_trace(raw), normalize_trace(raw)):
        restored = pickle.loads(pickle.dumps(fresh))
        assert restored.framework == framework == fresh.framework
        assert copy.deepcopy(normalize_trace(raw)).framework == framework


def test_an_unknown_attribute_still_raises_attribute_error() -> None:
    execution = normalize_trace(_generic_trace())
    with pytest.raises(AttributeError, match="no attribute 'frame'"):
        execution.frame  # type: ignore[attr-defined]  # noqa: B018
    assert Execution("e1", ()).framework == "unknown"
    assert not hasattr(Execution("e1", ()), "frame")
