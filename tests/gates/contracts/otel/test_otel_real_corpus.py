"""Every trace of the real-world corpus is read as a person reads it, or refused.

The corpus (tests/corpus/real-traces, SOURCES.md there; the files also in
tests/corpus/traces are read from there) holds traces recorded by other projects. For each
file the expectation below was written from reading its spans: the framework, the tool
calls in order, how the request and the answer start; or the words of the refusal when the
file is no single trace (log records, several runs, not JSON).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from canon.gates.contracts.execution import Execution
from canon.gates.contracts.otel import TraceError, normalize_trace, parse_trace_text

TESTS = Path(__file__).resolve().parents[3]
REAL = TESTS / "corpus" / "real-traces"
EARLIER = TESTS / "corpus" / "traces"


class Reads(NamedTuple):
    """A file read as one execution."""

    framework: str
    tools: list[str]
    request: str
    answer: str


class Refused(NamedTuple):
    """A file refused with a message holding ``words``."""

    words: str


EXPECTED: dict[str, Reads | Refused] = {
    "agentevals/helm.json": Reads(
        "google_adk", ["helm_list_releases"], "list all Helm releases", "There are two Helm relea"
    ),
    "agentevals/helm_2.json": Reads(
        "google_adk", [], "get me all the Helm rele", "To help you effectively,"
    ),
    "agentevals/helm_3.json": Reads(
        "google_adk", ["helm_list_releases"], "I need all the Helm rele", "Got it — I listed all re"
    ),
    "agentevals/k8s.json": Reads(
        "google_adk", [], "list all Helm releases", "To list all Helm release"
    ),
    "agentevals/tempo_export_with_batches.json": Reads(
        "google_adk", ["helm_list_releases"], "list all helm releases\n", "There are two Helm relea"
    ),
    "agentic-otel/framework_langchain.json": Reads(
        "langgraph",
        ["lookup_formulary", "check_coverage", "render_decision"],
        "Process pharmacy claim f",
        "**CLAIM DECISION: APPROV",
    ),
    "agentic-otel/framework_langchain.lines.jsonl": Reads(
        "langgraph",
        ["lookup_formulary", "check_coverage", "render_decision"],
        "Process pharmacy claim f",
        "**CLAIM DECISION: APPROV",
    ),
    "agentic-otel/framework_pydantic_ai.json": Reads(
        "pydantic_ai",
        ["lookup_formulary", "check_coverage", "render_decision"],
        "Process pharmacy claim f",
        "The pharmacy claim for m",
    ),
    "agentic-otel/framework_strands.json": Reads(
        "strands",
        ["lookup_formulary", "check_coverage", "render_decision"],
        "Process pharmacy claim f",
        "The pharmacy claim has b",
    ),
    "agentic-otel/framework_strands.lines.jsonl": Reads(
        "strands",
        ["lookup_formulary", "check_coverage", "render_decision"],
        "Process pharmacy claim f",
        "The pharmacy claim has b",
    ),
    "agentic-otel/valid_claim.json": Reads(
        "strands",
        ["lookup_formulary", "check_coverage", "render_decision"],
        "Process pharmacy claim f",
        "**CLAIM DECISION: APPROV",
    ),
    "agentic-otel/violation_parametric_only.json": Reads(
        "strands", [], "Is lisinopril typically ", "Yes, lisinopril is typic"
    ),
    "agentops/log_spans.json": Refused("8 OpenTelemetry log record"),
    "any-agent/AGNO_trace.genai-50fd4348.json": Reads(
        "any_agent",
        ["get_current_time", "write_file"],
        "Use the tools to find wh",
        "The current year in the ",
    ),
    "any-agent/AGNO_trace.json": Reads(
        "any_agent",
        ["get_current_time", "write_file"],
        "Find what year it is in ",
        '{"steps": [{"number": 1,',
    ),
    "any-agent/GOOGLE_trace.genai-50fd4348.json": Reads(
        "any_agent",
        ["get_current_time", "write_file"],
        "Use the tools to find wh",
        "The current year in the ",
    ),
    "any-agent/GOOGLE_trace.json": Reads(
        "any_agent",
        ["get_current_time", "write_file", "final_output"],
        "Find what year it is in ",
        '{"steps": [{"number": 1,',
    ),
    "any-agent/LANGCHAIN_trace.json": Reads(
        "any_agent",
        ["get_current_time", "write_file"],
        "Find what year it is in ",
        '{"steps": [{"number": 1,',
    ),
    "any-agent/LANGCHAIN_trace.openinference-fa7a2d64.json": Reads(
        "openinference",
        ["get_current_time", "write_file"],
        "Use the tools to find wh",
        "The year in the America/",
    ),
    "any-agent/LLAMA_INDEX_trace.json": Reads(
        "any_agent",
        ["get_current_time", "write_file", "final_output"],
        "Find what year it is in ",
        '{"steps": [{"number": 1,',
    ),
    "any-agent/LLAMA_INDEX_trace.openinference-fa7a2d64.json": Reads(
        "openinference", ["get_current_time", "write_file"], "Use the tools to find wh", "2025"
    ),
    "any-agent/OPENAI.sample-json-strings-daca21a6.json": Reads(
        "openinference",
        ["search_web", "write_file"],
        "what's a good brewery ne",
        "I have written the infor",
    ),
    "any-agent/OPENAI.sample-sdk-list-4dc69988.json": Reads(
        "openinference",
        ["search_web", "write_file"],
        "what's a good brewery ne",
        "I have written the infor",
    ),
    "any-agent/OPENAI_trace.genai-50fd4348.json": Reads(
        "any_agent", ["get_current_time", "write_file"], "", "The current year in the "
    ),
    "any-agent/OPENAI_trace.json": Reads(
        "any_agent",
        ["get_current_time", "write_file"],
        "Find what year it is in ",
        '{"steps": [{"number": 1,',
    ),
    "any-agent/OPENAI_trace.openinference-fa7a2d64.json": Reads(
        "openinference",
        ["get_current_time", "write_file"],
        "Use the tools to find wh",
        "The current year in the ",
    ),
    "any-agent/SMOLAGENTS_trace.genai-50fd4348.json": Reads(
        "any_agent",
        ["get_current_time", "write_file", "final_answer"],
        "New task:\nUse the tools ",
        "The year in the America/",
    ),
    "any-agent/SMOLAGENTS_trace.json": Reads(
        "any_agent",
        ["get_current_time", "write_file", "final_answer"],
        "New task:\nFind what year",
        '{"steps": [{"number": 1,',
    ),
    "any-agent/SMOLAGENTS_trace.openinference-fa7a2d64.json": Reads(
        "openinference",
        ["get_current_time", "write_file", "final_answer"],
        "Use the tools to find wh",
        "The current year in the ",
    ),
    "any-agent/TINYAGENT_trace.json": Reads(
        "any_agent",
        ["get_current_time", "write_file", "final_answer"],
        "Find what year it is in ",
        '{"steps": [{"number": 1,',
    ),
    "jaeger/anonymizer_trace_success.json": Reads("unknown", [], "", ""),
    "jaeger/apiv3_GetTrace.json": Reads("unknown", [], "", ""),
    "jaeger/ui_genaiTestTrace.json": Reads(
        "opentelemetry-genai",
        [
            "list_dashboards",
            "search_traces",
            "list_dashboards",
            "search_traces",
            "list_dashboards",
            "search_traces",
            "summarize_findings",
        ],
        "Why did the checkout lat",
        "Latency rose with a slow",
    ),
    "monocle/okahu_loader_be1db024.json": Reads(
        "langgraph",
        ["okahu_demo_fs_tool_check_balance"],
        "What is the balance on A",
        "The balance on account A",
    ),
    "monocle/teamsai_console_sample.json": Refused("not a trace: not JSON"),
    "monocle/test_adk_multi_agent.json": Reads(
        "google_adk",
        ["book_flight", "book_hotel"],
        "Book a flight from San F",
        "OK. I have booked a stay",
    ),
    "monocle/test_adk_single_agent.json": Reads(
        "google_adk", ["get_weather"], "What is the current weat", "OK. The weather in New Y"
    ),
    "monocle/test_anthropic_finish_reason_integration.json": Refused("holds 5 separate runs"),
    "monocle/test_aws_genai_idp_retrieve_and_generate.json": Reads(
        "monocle", [], "What is the purpose of t", "Based on the retrieved r"
    ),
    "monocle/test_crewai_multi_agent.json": Reads(
        "crewai",
        ["book_hotel", "book_flight"],
        "Book a hotel room at Mar",
        "Your complete travel pac",
    ),
    "monocle/test_crewai_single_agent.json": Reads(
        "crewai", ["book_hotel"], "Book Marriott Hotel in N", "YOUR BOOKING CONFIRMED #"
    ),
    "monocle/test_langgraph_multi_agent.json": Reads(
        "langgraph",
        ["get_weather", "get_weather", "book_flight", "book_hotel"],
        "book a flight from BOS t",
        "The exchange rate client",
    ),
    "monocle/test_litellm_openai_sample.json": Refused("holds 2 separate runs"),
    "monocle/test_ms_framework_multi_async_handoff.json": Reads(
        "microsoft_agent_framework",
        ["book_flight", "book_hotel"],
        "Book a flight from BOM t",
        "To proceed with your com",
    ),
    "monocle/test_ms_framework_multi_stream_agents_as_tools.json": Reads(
        "microsoft_agent_framework",
        ["book_flight", "book_hotel"],
        "Book a flight from BOM t",
        "Your flight from BOM to ",
    ),
    "monocle/test_ms_framework_single_agent.json": Reads(
        "microsoft_agent_framework",
        ["book_flight"],
        "Book a flight from JFK t",
        "Your flight from JFK to ",
    ),
    "monocle/test_openai_agents_sdk.json": Reads(
        "openai_agents",
        ["get_weather", "get_weather", "get_weather"],
        "What's the weather like ",
        "Here are the current tem",
    ),
    "monocle/unit_trace1_adk_travel.json": Reads(
        "google_adk", ["adk_book_hotel_5"], "Book a flight from San F", "OK. Here's a summary of "
    ),
    "openinference/vercel_v6_all_spans.json": Refused("holds 5 separate runs"),
    "openinference/vercel_v6_generateText.json": Refused("holds 2 separate runs"),
    "otel-proto/logs.json": Refused("not a trace: it holds 1 OpenTelemetry log record(s)"),
    "otel-proto/trace.json": Reads("unknown", [], "", ""),
    "strands-evals/adk_live_spans.json": Reads(
        "google_adk", ["calculator"], "What is 15 multiplied by", "15 multiplied by 37 is 5"
    ),
    "strands-evals/autogen_live_spans.json": Reads("autogen", ["calculate"], "", ""),
    "strands-evals/claude_adot_spans.json": Reads(
        "claude_agent_sdk",
        ["Agent", "Agent", "Bash", "Bash"],
        "What is 42 * 7, and how ",
        "Here are your results:\n\n",
    ),
    "strands-evals/claude_live_spans.json": Reads(
        "claude_agent_sdk",
        ["Agent", "Agent", "Bash", "Bash", "Agent", "Bash"],
        "Look up the weather in N",
        "New York is 89°F and Sea",
    ),
    "strands-evals/openai_agents_genai_adot_spans.json": Reads(
        "openai_agents",
        ["multiply_numbers"],
        "What is 42 * 7, and what",
        "The product of 42 and 7 ",
    ),
    "strands-evals/openai_agents_genai_live_spans.json": Reads(
        "openai_agents",
        [
            "ask_research_specialist",
            "lookup_stock_price",
            "ask_math_specialist",
            "multiply_numbers",
            "multiply_numbers",
        ],
        "Look up the stock price ",
        "The current stock price ",
    ),
    "strands-evals/openai_agents_openinference_adot_spans.json": Reads(
        "openai_agents",
        ["handoff to math_specialist", "multiply_numbers"],
        "What is 42 * 7, and what",
        "The product of \\(42 \\tim",
    ),
    "strands-evals/openai_agents_openinference_live_spans.json": Reads(
        "openai_agents",
        ["ask_math_specialist", "multiply_numbers", "divide_numbers", "divide_numbers"],
        "What is 42 multiplied by",
        "The result of \\( 42 \\) m",
    ),
    "strands-evals/openinference_adot_spans.json": Refused("holds 2 separate runs"),
    "strands-evals/openinference_live_spans.json": Reads(
        "langchain", ["finish"], "What is the weather diff", "Taipei is warmer than Se"
    ),
    "strands-evals/otel_genai_convention_spans.json": Reads(
        "opentelemetry-genai",
        ["get_weather", "get_weather"],
        "What's the weather in Pa",
        "The weather in Paris is ",
    ),
    "strands-evals/pydantic_ai_live_spans.json": Reads(
        "pydantic_ai", ["get_weather"], "What's the weather like ", "The current weather in S"
    ),
    "strands-evals/smolagents_live_spans.json": Reads(
        "smolagents",
        ["web_search", "final_answer"],
        "What is the population o",
        "The population of Tokyo ",
    ),
}


def _text(relative: str) -> str:
    if relative == "agentic-otel/framework_langchain.lines.jsonl":
        return _as_json_lines(json.loads(_text("agentic-otel/framework_langchain.json")))
    for path in (
        REAL / relative,
        EARLIER / relative,
        EARLIER / relative.replace("agentevals/", "agentevals-kagent/"),
    ):
        if path.is_file():
            return path.read_text()
    raise AssertionError(f"corpus file {relative} is missing")


def _as_json_lines(document: dict[str, Any]) -> str:
    """The corpus's conversion: one span per OTLP JSON line, in end-time order."""
    lines = []
    for block in document["resourceSpans"]:
        for scope in block["scopeSpans"]:
            for span in scope["spans"]:
                part = {**scope, "spans": [span]}
                line = {"resourceSpans": [{**block, "scopeSpans": [part]}]}
                lines.append((int(span["endTimeUnixNano"]), json.dumps(line)))
    return "\n".join(line for _, line in sorted(lines)) + "\n"


def _prefix(text: str | None, expected: str) -> str:
    if not expected:
        return "" if text is None else f"unexpected text {text[:40]!r}"
    return (text or "")[: len(expected)]


def _read(relative: str) -> Execution:
    return normalize_trace(parse_trace_text(_text(relative), source=relative), source=relative)


def test_every_file_in_the_corpus_directory_has_an_expectation() -> None:
    on_disk = {str(p.relative_to(REAL)) for p in REAL.glob("*/*.json*")}
    assert on_disk <= set(EXPECTED)
    assert len(EXPECTED) == 65


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_corpus_file_reads_as_its_spans_say_or_is_refused(relative: str) -> None:
    expected = EXPECTED[relative]
    if isinstance(expected, Refused):
        with pytest.raises(TraceError) as raised:
            _read(relative)
        assert str(raised.value).startswith(f"{relative}: ")
        assert expected.words in str(raised.value)
        return
    execution = _read(relative)
    assert execution.framework == expected.framework
    assert [s.name for s in execution.steps if s.kind == "tool_call"] == expected.tools
    # "" = the spans hold no request (answer): none may be made up
    assert _prefix(execution.input_text, expected.request) == expected.request
    assert _prefix(execution.output_text, expected.answer) == expected.answer
    assert execution.execution_id not in ("", "unknown")
    assert "(unnamed span)" not in execution.step_names()
