"""Executions keep their steps as columns: validation reads names, kinds and statuses, and
whole steps are built only when something reads them."""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import canon.gates.contracts.otel.normalize as normalize_module
from canon.gates.contracts import (
    DataSource,
    Execution,
    Step,
    StepColumns,
    load_contract,
    normalize_trace,
    validate,
)
from canon.gates.contracts.otel.values import decode_jaeger_tags, decode_kv_list

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "traces"
CORPUS_FILES = sorted(CORPUS.glob("*/*.json"))

COLUMN_ONLY_CONTRACT = """\
name: columns
version: "1"
source_map:
  lookup: {source_name: formulary-db, source_type: database}
constraints:
  - type: must_not_use_only_parametric_knowledge
  - type: must_include_steps
    steps: [lookup, render]
  - type: must_precede
    before: lookup
    after: render
  - type: must_not_include_steps
    steps: [delete_member]
  - type: must_retrieve_from
    sources: [formulary-db]
  - type: must_contain_citations
    min_count: 1
    when: {input_matches: claim, step_present: [lookup]}
  - type: must_escalate_when
    condition: {input_matches: urgent}
    description: urgent requests go to a human
"""


def _steps() -> tuple[Step, ...]:
    return (
        Step("agent", "agent", span_id="r", status="ok"),
        Step("lookup", "tool_call", span_id="a", parent_id="r", status="ok", outputs={"tier": 2}),
        Step("render", "tool_call", span_id="b", parent_id="r", status="ok"),
        Step("kb", "retrieval", status="error", sources=(DataSource("kb-9", "knowledge_base"),)),
    )


def _counted(steps: tuple[Step, ...]) -> tuple[StepColumns, list[int]]:
    calls: list[int] = []

    def build() -> tuple[Step, ...]:
        calls.append(1)
        return steps

    names = tuple(step.name for step in steps)
    kinds = tuple(step.kind for step in steps)
    statuses = tuple(step.status for step in steps)
    return StepColumns(names, kinds, statuses, build), calls


def _execution(steps: StepColumns | tuple[Step, ...]) -> Execution:
    return Execution(
        "e1", steps, input_text="Process claim 7", output_text="Approved per Section 4.2.1."
    )


def test_validation_reads_only_the_columns_when_the_source_map_accounts_for_every_source() -> None:
    columns, calls = _counted(_steps())
    verdict = validate(load_contract(COLUMN_ONLY_CONTRACT), _execution(columns))
    assert verdict.status == "pass", verdict.violations
    assert calls == []


def test_a_source_only_the_trace_names_builds_the_steps_once_and_counts_only_successes() -> None:
    steps = (*_steps(), Step("kb2", "retrieval", status="ok", sources=(DataSource("kb-1", "kb"),)))
    columns, calls = _counted(steps)
    contract = load_contract(
        "name: c\nversion: '1'\nconstraints:\n"
        "  - type: must_retrieve_from\n    sources: [kb-1]\n"
        "  - type: must_retrieve_from\n    sources: [kb-9]\n"
    )
    verdict = validate(contract, _execution(columns))
    assert [violation.index for violation in verdict.violations] == [1]  # kb-9 only errored
    assert verdict.violations[0].evidence["consulted"] == ["kb-1"]
    assert calls == [1]


def test_a_tool_result_condition_reads_whole_steps() -> None:
    columns, calls = _counted(_steps())
    contract = load_contract(
        "name: c\nversion: '1'\nconstraints:\n"
        "  - type: must_include_steps\n    steps: [audit]\n"
        "    when: {tool_result_matches: {tool: lookup, key: tier, value: 2}}\n"
    )
    assert validate(contract, _execution(columns)).status == "fail"
    assert calls == [1]


def test_steps_given_as_a_list_are_kept_as_columns_that_agree_with_them() -> None:
    steps = _steps()
    execution = Execution("e1", list(steps))
    assert isinstance(execution.steps, StepColumns) and execution.columns is execution.steps
    assert execution.step_names() == ("agent", "lookup", "render", "kb")
    assert execution.columns.kinds == ("agent", "tool_call", "tool_call", "retrieval")
    assert execution.columns.statuses == ("ok", "ok", "ok", "error")
    assert execution.steps == steps and steps == execution.steps
    assert execution.steps[1:3] == steps[1:3] and execution.steps[-1] is steps[-1]
    assert len(execution.steps) == 4 and list(execution.steps) == list(steps)
    assert execution == Execution("e1", steps)
    assert execution != Execution("e1", steps[:2])
    assert execution.steps != "agent"
    assert "Step(name='lookup'" in repr(execution.steps)


def test_a_normalized_execution_survives_copying_and_pickling() -> None:
    raw = json.loads((CORPUS / "abc-examples" / "valid_claim.json").read_text())
    execution = normalize_trace(raw)
    for restored in (pickle.loads(pickle.dumps(execution)), copy.deepcopy(execution)):
        assert restored == execution
        assert restored.columns.names == execution.columns.names
        assert [step.outputs for step in restored.steps] == [s.outputs for s in execution.steps]


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_the_columns_of_every_corpus_trace_agree_with_its_steps(path: Path) -> None:
    execution = normalize_trace(json.loads(path.read_text()))
    steps = tuple(execution.steps)
    assert execution.columns.names == tuple(step.name for step in steps)
    assert execution.columns.kinds == tuple(step.kind for step in steps)
    assert execution.columns.statuses == tuple(step.status for step in steps)


def _genai_trace(spans: int) -> dict[str, Any]:
    def attr(key: str, value: str) -> dict[str, Any]:
        return {"key": key, "value": {"stringValue": value}}

    out = []
    for index in range(spans):
        tool = index % 2 == 1
        attributes = [attr("gen_ai.operation.name", "execute_tool" if tool else "chat")]
        if tool:
            attributes.append(attr("gen_ai.tool.name", f"tool{index % 3}"))
        out.append(
            {
                "spanId": f"{index + 1:016x}",
                "parentSpanId": "" if index == 0 else f"{1:016x}",
                "name": "execute_tool" if tool else "chat",
                "startTimeUnixNano": str(1_711_000_000_000_000_000 + index),
                "status": {"code": 1},
                "attributes": attributes,
            }
        )
    return {"resourceSpans": [{"scopeSpans": [{"scope": {"name": "s"}, "spans": out}]}]}


def test_validating_a_normalized_trace_builds_no_step(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    real: Callable[..., Step] = normalize_module.otlp_step

    def counting(*args: Any) -> Step:
        step = real(*args)
        built.append(step.name)
        return step

    monkeypatch.setattr(normalize_module, "otlp_step", counting)
    execution = normalize_trace(_genai_trace(40))
    contract = load_contract(
        "name: c\nversion: '1'\nconstraints:\n"
        "  - type: must_include_steps\n    steps: [tool0, tool1, tool2]\n"
        "  - type: must_precede\n    before: tool1\n    after: tool2\n"
        "  - type: must_not_use_only_parametric_knowledge\n"
    )
    assert validate(contract, execution).status == "pass"
    assert built == []
    assert execution.steps[1].name == "tool1"
    assert len(built) == 40  # every step at once, on the first read
    assert execution.steps[3].name == "tool0" and len(built) == 40


def test_of_duplicate_attribute_keys_the_first_wins_for_kind_and_attributes() -> None:
    def attr(key: str, value: str) -> dict[str, Any]:
        return {"key": key, "value": {"stringValue": value}}

    items = [attr("gen_ai.operation.name", "chat"), attr("gen_ai.operation.name", "execute_tool")]
    items.append(attr("gen_ai.tool.name", "lookup"))
    span = {"spanId": "a1", "name": "llm", "startTimeUnixNano": "1", "attributes": items}
    raw = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    step = normalize_trace(raw).steps[0]
    assert (step.kind, step.name) == ("model_call", "llm")
    assert step.attributes["gen_ai.operation.name"] == "chat"
    assert decode_kv_list(items)["gen_ai.operation.name"] == "chat"
    tags = [{"key": "k", "type": "string", "value": "first"}, {"key": "k", "value": "second"}]
    assert decode_jaeger_tags(tags) == {"k": "first"}
