"""The normalizer over every real and hand-built trace in tests/corpus/traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from canon.gates.contracts.execution import Execution
from canon.gates.contracts.otel import normalize_trace, parse_trace_text
from canon.gates.contracts.otel.spans import collect_spans
from canon.gates.contracts.otel.tree import choose_root, in_start_order

CORPUS = Path(__file__).resolve().parents[4] / "tests" / "corpus" / "traces"

# file: (framework, number of steps, tool steps in order, request starts, answer starts)
EXPECTED: dict[str, tuple[str, int, list[str], str, str]] = {
    "abc-examples/clinical_invalid.json": ("strands", 2, [], "Patient on warfarin", "Yes, you can"),
    "abc-examples/clinical_valid.json": (
        "strands",
        7,
        [
            "check_drug_interactions",
            "lookup_clinical_guidelines",
            "check_dosing_range",
            "render_recommendation",
        ],
        "Patient with type 2 diabetes",
        "Based on clinical guidelines",
    ),
    "abc-examples/invalid_claim.json": ("strands", 2, [], "Process pharmacy claim", "The claim"),
    "abc-examples/kyc_invalid.json": ("strands", 2, [], "Run KYC screening", "KYC screening"),
    "abc-examples/kyc_valid.json": (
        "strands",
        7,
        ["screen_sanctions", "verify_jurisdiction", "assess_risk", "render_determination"],
        "Run KYC screening",
        "KYC screening complete",
    ),
    "abc-examples/valid_claim.json": (
        "strands",
        6,
        ["lookup_formulary", "check_coverage", "render_decision"],
        "Process pharmacy claim",
        "Based on my review",
    ),
    "agentevals-kagent/helm.json": (
        "google_adk",
        96,
        ["helm_list_releases"],
        "list all Helm releases",
        "There are two Helm releases",
    ),
    "agentevals-kagent/helm_2.json": (
        "google_adk",
        72,
        [],
        "get me all the Helm releases",
        "To help you effectively",
    ),
    "agentevals-kagent/helm_3.json": (
        "google_adk",
        125,
        ["helm_list_releases"],
        "I need all the Helm releases",
        "Got it",
    ),
    "agentevals-kagent/k8s.json": ("google_adk", 73, [], "list all Helm", "To list all Helm"),
    "agentevals-kagent/tempo_export_with_batches.json": (
        "google_adk",
        86,
        ["helm_list_releases"],
        "list all helm releases",
        "There are two Helm releases",
    ),
    "agentic-otel/framework_langchain.json": (
        "langgraph",
        33,
        ["lookup_formulary", "check_coverage", "render_decision"],
        "Process pharmacy claim",
        "**CLAIM DECISION: APPROVED**",
    ),
    "agentic-otel/framework_pydantic_ai.json": (
        "pydantic_ai",
        8,
        ["lookup_formulary", "check_coverage", "render_decision"],
        "Process pharmacy claim",
        "The pharmacy claim for member",
    ),
    "agentic-otel/framework_strands.json": (
        "strands",
        12,
        ["lookup_formulary", "check_coverage", "render_decision"],
        "Process pharmacy claim",
        "The pharmacy claim has been",
    ),
    "agentic-otel/valid_claim.json": (
        "strands",
        12,
        ["lookup_formulary", "check_coverage", "render_decision"],
        "Process pharmacy claim",
        "**CLAIM DECISION: APPROVED**",
    ),
    "agentic-otel/violation_parametric_only.json": (
        "strands",
        3,
        [],
        "Is lisinopril typically covered",
        "Yes, lisinopril is typically",
    ),
}
ANY_AGENT_TOOLS = {
    "AGNO": ["get_current_time", "write_file"],
    "GOOGLE": ["get_current_time", "write_file", "final_output"],
    "LANGCHAIN": ["get_current_time", "write_file"],
    "LLAMA_INDEX": ["get_current_time", "write_file", "final_output"],
    "OPENAI": ["get_current_time", "write_file"],
    "SMOLAGENTS": ["get_current_time", "write_file", "final_answer"],
    "TINYAGENT": ["get_current_time", "write_file", "final_answer"],
}
SPAN_COUNTS = {"AGNO": 6, "GOOGLE": 7, "LANGCHAIN": 7, "LLAMA_INDEX": 9, "OPENAI": 6}
for _name, _tools in ANY_AGENT_TOOLS.items():
    EXPECTED[f"any-agent/{_name}_trace.json"] = (
        "any_agent",
        SPAN_COUNTS.get(_name, {"SMOLAGENTS": 7, "TINYAGENT": 8}.get(_name, 0)),
        _tools,
        "Find what year it is" if _name != "SMOLAGENTS" else "New task:",
        '{"steps": [{"number": 1',
    )


def _load(relative: str) -> Execution:
    path = CORPUS / relative
    return normalize_trace(parse_trace_text(path.read_text(), source=str(path)), source=str(path))


def test_every_corpus_file_has_an_expectation() -> None:
    on_disk = {str(p.relative_to(CORPUS)) for p in CORPUS.glob("*/*.json")}
    assert on_disk == set(EXPECTED)


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_corpus_trace_normalizes_to_the_expected_steps_and_texts(relative: str) -> None:
    framework, step_count, tools, request, answer = EXPECTED[relative]
    execution = _load(relative)
    assert execution.framework == framework
    assert len(execution.steps) == step_count
    assert [s.name for s in execution.steps if s.kind == "tool_call"] == tools
    assert (execution.input_text or "").startswith(request)
    assert (execution.output_text or "").startswith(answer)
    assert execution.execution_id not in ("", "unknown")


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_corpus_steps_are_in_start_time_order(relative: str) -> None:
    starts = [step.start_ns for step in _load(relative).steps]
    assert starts == sorted(starts)
    assert all(start > 1_600_000_000 * 10**9 for start in starts)


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_corpus_metadata_carries_the_service_name(relative: str) -> None:
    assert "service.name" in _load(relative).metadata


def test_langgraph_root_is_invoke_agent_not_the_earlier_create_agent() -> None:
    raw = json.loads((CORPUS / "agentic-otel/framework_langchain.json").read_text())
    root = choose_root(in_start_order(collect_spans(raw, source="t").spans))
    assert root.name == "invoke_agent LangGraph"
    names = _load("agentic-otel/framework_langchain.json").step_names()
    # both parentless spans stay steps: the root is where the run is read, not a dropped span
    assert "create_agent react_agent" in names
    assert "invoke_agent LangGraph" in names


def test_jaeger_root_is_the_http_server_span_holding_the_whole_run() -> None:
    raw = json.loads((CORPUS / "agentevals-kagent/helm.json").read_text())
    root = choose_root(in_start_order(collect_spans(raw, source="t").spans))
    assert root.name == "POST /"


def test_any_agent_root_is_kept_as_a_step_and_ids_are_hex() -> None:
    execution = _load("any-agent/OPENAI_trace.json")
    assert execution.steps[0].name == "invoke_agent [any_agent]"
    assert execution.steps[0].kind == "agent"
    assert execution.execution_id == format(100927429609276267646756448943279827607, "032x")
    assert execution.steps[1].parent_id == execution.steps[0].span_id


def test_strands_tool_results_come_from_span_events_as_parsed_dicts() -> None:
    execution = _load("agentic-otel/framework_strands.json")
    coverage = next(s for s in execution.steps if s.name == "check_coverage")
    assert coverage.inputs == {"member_id": "MEM-001", "drug_name": "lisinopril"}
    assert isinstance(coverage.outputs, dict)
    assert coverage.outputs["coverage_active"] is True
    assert coverage.status == "ok"


def test_pydantic_ai_tool_results_come_from_tool_response() -> None:
    execution = _load("agentic-otel/framework_pydantic_ai.json")
    coverage = next(s for s in execution.steps if s.name == "check_coverage")
    assert coverage.outputs["coverage_active"] is True
    assert coverage.inputs["member_id"] == "MEM-001"
    assert "running tool" not in execution.step_names()


def test_langgraph_tool_results_are_unwrapped_from_the_serialized_tool_message() -> None:
    execution = _load("agentic-otel/framework_langchain.json")
    lookup = next(s for s in execution.steps if s.name == "lookup_formulary")
    assert lookup.inputs == {"drug_name": "lisinopril"}
    assert lookup.outputs["status"] == "covered"
    assert lookup.outputs["tier"] == 1


def test_any_agent_tool_output_is_parsed_and_final_output_is_the_answer() -> None:
    execution = _load("any-agent/GOOGLE_trace.json")
    clock = next(s for s in execution.steps if s.name == "get_current_time")
    assert clock.outputs["timezone"] == "America/New_York"
    raw = json.loads((CORPUS / "any-agent/GOOGLE_trace.json").read_text())
    assert json.loads(execution.output_text or "") == raw["final_output"]


def test_jaeger_tool_span_keeps_its_mcp_result_and_model_spans_are_classified() -> None:
    execution = _load("agentevals-kagent/helm_3.json")
    tool = next(s for s in execution.steps if s.kind == "tool_call")
    assert tool.inputs == {"all_namespaces": "true", "output": "json"}
    assert isinstance(tool.outputs, list)
    kinds = {s.name: s.kind for s in execution.steps}
    assert kinds["call_llm"] == "model_call"
    # ADK's call_llm and OpenLLMetry's openai.chat under it record one model call: once
    assert kinds["openai.chat"] == "custom"
    assert kinds["invoke_agent helm_agent"] == "agent"
    assert execution.metadata["service.name"] == "helm_agent"


def test_jaeger_error_tags_mark_steps_as_errors() -> None:
    execution = _load("agentevals-kagent/k8s.json")
    first = next(s for s in execution.steps if s.span_id == "31e3495892e80304")
    assert first.status == "error"
    assert first.attributes["http.status_code"] == 404


def test_tempo_export_reads_legacy_instrumentation_library_spans() -> None:
    execution = _load("agentevals-kagent/tempo_export_with_batches.json")
    assert execution.metadata["service.name"] in {"helm_agent", "kagent-controller"}
    assert execution.execution_id == "dd547580319ab0312cee07f1def50dad"
    assert sum(1 for s in execution.steps if s.kind == "model_call") >= 2


def test_protobuf_json_int_attributes_become_integers() -> None:
    execution = _load("agentic-otel/framework_strands.json")
    chat = next(s for s in execution.steps if s.name == "chat")
    assert chat.attributes["gen_ai.usage.input_tokens"] == 749


def test_corpus_file_split_into_json_lines_gives_the_same_execution() -> None:
    document = json.loads((CORPUS / "agentic-otel/framework_strands.json").read_text())
    block = document["resourceSpans"][0]
    spans = block["scopeSpans"][0]["spans"]
    lines = []
    for half in (spans[:6], spans[6:]):
        part = {**block, "scopeSpans": [{**block["scopeSpans"][0], "spans": half}]}
        lines.append(json.dumps({"resourceSpans": [part]}))
    from_lines = normalize_trace(parse_trace_text("\n".join(lines) + "\n"))
    whole = normalize_trace(document)
    assert from_lines.step_names() == whole.step_names()
    assert from_lines.input_text == whole.input_text
    assert from_lines.output_text == whole.output_text
