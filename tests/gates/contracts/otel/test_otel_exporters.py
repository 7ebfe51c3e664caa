"""Exports of the evaluation and tracing tools teams already use (issue 24, section 2).

Each recording under tests/corpus/backends/{langsmith,deepeval,agentops} is a public
project's (tests/corpus/backends/SOURCES.md); each expectation was written after reading
it as a person does: the steps, the tool calls in order, the request and the answer. The
OpenAI Agents SDK examples are written here (no public recording was found), and so are
the bad inputs, each named as such.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from canon.gates.contracts.execution import Execution
from canon.gates.contracts.otel import TraceError, normalize_trace, normalize_traces
from tests.support.cli import run_canon

TESTS = Path(__file__).resolve().parents[3]
BACKENDS = TESTS / "corpus" / "backends"
DEEPEVAL = BACKENDS / "deepeval" / "agentcore_async_tool_schema.json"
LANGSMITH = BACKENDS / "langsmith" / "wrap_openai_chat.trimmed.json"
AGENTOPS = BACKENDS / "agentops" / "openai_agents_api_output.trimmed.json"
SUMMARIES = BACKENDS / "agentops" / "dashboard_trace_summaries.json"
ANY_AGENT = TESTS / "corpus" / "traces" / "any-agent" / "OPENAI_trace.json"


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _tools(execution: Execution) -> list[str]:
    return [step.name for step in execution.steps if step.kind == "tool_call"]


def _kinds(execution: Execution) -> list[tuple[str, str]]:
    return [(step.name, step.kind) for step in execution.steps]


# deepeval traces (real: deepeval's AgentCore integration test, a Strands agent)


def test_deepeval_strands_on_agentcore_trace() -> None:
    execution = normalize_trace(_json(DEEPEVAL))
    assert execution.framework == "deepeval"
    assert execution.execution_id == "d0eabd847668b09e51866e39dff3359c"
    # the agent loops twice: the model asks for calculate, then answers with its result
    assert _tools(execution) == ["calculate"]
    assert [name for name, kind in _kinds(execution) if kind == "model_call"] == ["chat", "chat"]
    call = next(step for step in execution.steps if step.kind == "tool_call")
    assert (call.span_id, call.parent_id) == ("e7b118481b5df4c4", "d998ce7d29f9c49f")
    assert call.outputs == 54.0
    assert (execution.input_text or "").endswith("What is 9 multiplied by 6?")
    assert (execution.output_text or "").endswith("The result of 9 multiplied by 6 is 54.\n")
    agent = next(step for step in execution.steps if step.kind == "agent")
    assert (agent.name, agent.parent_id) == ("invoke_agent Strands Agents", "")


def test_a_deepeval_errored_span_is_a_failed_step() -> None:
    trace = _json(DEEPEVAL)
    trace["toolSpans"][0]["status"] = "ERRORED"
    call = next(s for s in normalize_trace(trace).steps if s.kind == "tool_call")
    assert call.status == "error"


def test_deepeval_spans_without_a_uuid_are_refused_naming_the_place() -> None:
    # hand-written bad input: a tool span that lost its uuid
    trace = _json(DEEPEVAL)
    del trace["toolSpans"][0]["uuid"]
    with pytest.raises(TraceError, match=r"without a uuid or a name at top level\.toolSpans\[0\]"):
        normalize_trace(trace, source="t.json")


def test_deepeval_span_list_of_the_wrong_type_is_refused() -> None:
    trace = _json(DEEPEVAL)
    trace["llmSpans"] = {"uuid": "x"}
    with pytest.raises(TraceError, match="'llmSpans' holding JSON object at top level"):
        normalize_trace(trace, source="t.json")
    trace["llmSpans"] = ["not a span"]
    with pytest.raises(TraceError, match=r"string at top level\.llmSpans\[0\]"):
        normalize_trace(trace, source="t.json")


# LangSmith runs (real: langsmith-sdk's recorded wrap_openai upload, post then patch)


def test_langsmith_wrap_openai_upload_post_then_patch() -> None:
    execution = normalize_trace(_json(LANGSMITH))
    assert execution.framework == "langsmith"
    assert execution.execution_id == "79f147133ed74dea83f09fecd2303040"
    assert _kinds(execution) == [("ChatOpenAI", "model_call")]
    (run,) = execution.steps
    # the patch completed the posted run: its end time and its outputs
    assert (run.start_ns, run.end_ns) == (1728363033887026000, 1728363045014601000)
    assert run.attributes["llm.model_name"] == "o1-mini"
    assert (execution.input_text or "").startswith("Write a bash script that takes a matrix")
    assert (execution.output_text or "").startswith("Certainly! Below is a Bash script")


def test_a_langsmith_batch_upload_in_one_object_reads_the_same() -> None:
    post, patch = _json(LANGSMITH)
    batch = normalize_trace({"post": post["post"], "patch": patch["patch"]})
    assert batch.output_text == normalize_trace(_json(LANGSMITH)).output_text


def test_a_langsmith_patch_without_its_post_is_refused() -> None:
    # bad input built from the recording: the upload lost its post
    _, patch = _json(LANGSMITH)
    with pytest.raises(
        TraceError, match=r"LangSmith patch at top level\.patch\[0\] for run 79f14713"
    ):
        normalize_trace(patch, source="t.json")


def _run_tree() -> dict[str, Any]:
    """A hand-written run tree (the shape of ``RunTree.dict()``): an agent, two tools, a model."""

    def run(name: str, run_type: str, second: int, **more: Any) -> dict[str, Any]:
        return {
            "id": f"0190f1d2-0000-7000-8000-0000000000{second:02d}",
            "name": name,
            "run_type": run_type,
            "start_time": f"2025-01-01T00:00:{second:02d}Z",
            "end_time": f"2025-01-01T00:00:{second + 1:02d}Z",
            **more,
        }

    return run(
        "billing_agent",
        "chain",
        0,
        inputs={"messages": [{"role": "user", "content": "refund INV-1?"}]},
        outputs={"output": "refunded INV-1"},
        child_runs=[
            run("ChatOpenAI", "llm", 1, child_runs=[run("openai.chat", "llm", 2)]),
            run("lookup_invoice", "tool", 3, inputs={"invoice": "INV-1"}, outputs={"ok": 1}),
            run("issue_refund", "tool", 4, error="refund service down"),
        ],
    )


def test_a_langsmith_run_tree_reads_its_child_runs_in_order() -> None:
    execution = normalize_trace(_run_tree())
    assert _tools(execution) == ["lookup_invoice", "issue_refund"]
    assert [s.status for s in execution.steps if s.kind == "tool_call"] == ["unset", "error"]
    root_id = "0190f1d2000070008000000000000000"
    assert {s.parent_id for s in execution.steps if s.kind == "tool_call"} == {root_id}
    assert execution.execution_id == root_id  # a run tree's trace is its root run
    assert execution.input_text == "refund INV-1?"
    assert execution.output_text == "refunded INV-1"


def test_a_model_call_recorded_by_a_framework_and_a_provider_counts_once() -> None:
    # ChatOpenAI (LangChain's run) holds openai.chat (the provider's): one model call
    execution = normalize_trace(_run_tree())
    assert [name for name, kind in _kinds(execution) if kind == "model_call"] == ["ChatOpenAI"]
    assert dict(_kinds(execution))["openai.chat"] == "custom"


def test_two_model_calls_side_by_side_stay_two() -> None:
    tree = _run_tree()
    tree["child_runs"][0]["child_runs"] = []
    tree["child_runs"].append(
        {**tree["child_runs"][0], "id": "0190f1d2-0000-7000-8000-0000000000ff"}
    )
    calls = [name for name, kind in _kinds(normalize_trace(tree)) if kind == "model_call"]
    assert calls == ["ChatOpenAI", "ChatOpenAI"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t["child_runs"][1].pop("id"), r"without an id or a name at top level"),
        (lambda t: t.update(child_runs={"a": 1}), "'child_runs' holding JSON object"),
        (lambda t: t["child_runs"].append("run"), r"string at top level\.child_runs\[3\]"),
        (lambda t: t["child_runs"][1].update(run_type=5), r"child_runs\[1\], not a LangSmith run"),
    ],
    ids=["missing id", "child_runs not a list", "child not a run", "wrong run_type type"],
)
def test_bad_langsmith_run_trees_are_refused(change: Any, message: str) -> None:
    # hand-written bad inputs
    tree = _run_tree()
    change(tree)
    with pytest.raises(TraceError, match=message):
        normalize_trace(tree, source="t.json")


def test_a_langsmith_run_beside_spans_it_does_not_read_is_refused() -> None:
    tree = _run_tree()
    tree["debug"] = {"spans": [{"name": "lost", "spanId": "1"}]}
    with pytest.raises(TraceError, match="under 'debug'"):
        normalize_trace(tree, source="t.json")


def test_langsmith_runs_linked_in_a_cycle_are_read_or_refused_never_lost() -> None:
    # hand-written bad input: two runs naming each other as parent
    first = {"id": "a1", "name": "a", "run_type": "tool", "parent_run_id": "b2", "trace_id": "t"}
    second = {"id": "b2", "name": "b", "run_type": "tool", "parent_run_id": "a1", "trace_id": "t"}
    try:
        (execution,) = normalize_traces({"runs": [first, second]}, source="t.json")
    except TraceError:
        return
    assert sorted(_tools(execution)) == ["a", "b"]


def test_a_deeply_nested_run_tree_is_refused_not_a_recursion_error() -> None:
    tree: dict[str, Any] = {"id": "r0", "name": "r", "run_type": "chain"}
    inner = tree
    for depth in range(1, 300):
        child = {"id": f"r{depth}", "name": "r", "run_type": "chain"}
        inner["child_runs"] = [child]
        inner = child
    with pytest.raises(TraceError, match="nested over 200 deep"):
        normalize_trace(tree, source="t.json")


# AgentOps exports (real: an OpenAI Agents SDK run as the AgentOps API returns it)


def test_agentops_openai_agents_export() -> None:
    execution = normalize_trace(_json(AGENTOPS))
    assert execution.framework == "openai_agents"
    # the spans carry no trace id: the enclosing object's is the run's
    assert execution.execution_id == "4a43cb9945150e9932d35a76eb513001"
    assert _kinds(execution) == [
        ("agents.run.Hello World Agent", "agent"),
        ("agents.trace.Agent workflow", "custom"),
        ("agents.agent", "agent"),
        ("agents.response", "model_call"),
        ("agents.agent", "agent"),
        ("agents.trace.Agent workflow", "custom"),
    ]
    assert _tools(execution) == []
    assert execution.input_text == "Tell me about recursion in programming."
    assert (execution.output_text or "").startswith("Recursion in programming is a technique")
    root = execution.steps[0]
    # the nested span_attributes, flattened back to their dotted keys
    assert root.attributes["gen_ai.request.model"] == "gpt-4o"
    assert root.attributes["gen_ai.completion.0.role"] == "assistant"
    assert root.attributes["gen_ai.usage.total_tokens"] == "491"
    assert execution.metadata["service.name"] == "serviceName"


def test_an_agentops_tool_row_is_a_tool_call() -> None:
    export = _json(AGENTOPS)
    row = export["spans"][3]
    row.update(span_type="tool", span_name="get_weather", status_code="Error")
    row["span_attributes"]["tool"] = {"name": "get_weather"}
    call = next(s for s in normalize_trace(export).steps if s.kind == "tool_call")
    assert (call.name, call.status) == ("get_weather", "error")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda e: e["spans"][2].pop("span_id"), r"without a span_id or a span_name"),
        (lambda e: e["spans"][2].update(span_attributes=[1]), "'span_attributes' holding"),
        (lambda e: e["spans"].append(7), r"int at top level\.spans\[6\]"),
    ],
    ids=["missing span_id", "span_attributes not an object", "a row that is no object"],
)
def test_bad_agentops_exports_are_refused(change: Any, message: str) -> None:
    export = _json(AGENTOPS)
    change(export)
    with pytest.raises(TraceError, match=message):
        normalize_trace(export, source="t.json")


def test_agentops_dashboard_trace_summaries_are_refused_naming_the_first() -> None:
    # real: the AgentOps dashboard's trace list holds summaries, no spans
    with pytest.raises(TraceError, match=r"not a trace: .* at top level\.traces\[0\]"):
        normalize_traces(_json(SUMMARIES), source="summaries.json")


# grouped exports {"traces": [{"spans": [...]}, ...]} (built from real spans)


def test_grouped_traces_read_each_trace_as_a_run() -> None:
    any_agent = _json(ANY_AGENT)
    grouped = {"traces": [_json(AGENTOPS), {"spans": any_agent["spans"]}]}
    runs = normalize_traces(grouped, source="grouped.json")
    by_id = {run.execution_id: _tools(run) for run in runs}
    assert by_id["4a43cb9945150e9932d35a76eb513001"] == []
    other = normalize_traces({"spans": any_agent["spans"]})[0]
    assert by_id[other.execution_id] == ["get_current_time", "write_file"]


def test_grouped_traces_with_fields_beside_them_read_the_same() -> None:
    spans = _json(ANY_AGENT)["spans"]
    plain = normalize_traces({"traces": [{"spans": spans}]})
    fields = {"name": "export", "startTime": "2025-01-01T00:00:00Z"}
    wrapped = normalize_traces({**fields, "traces": [{**fields, "spans": spans}]})
    assert [_tools(run) for run in wrapped] == [_tools(run) for run in plain]


def test_grouped_traces_beside_other_spans_are_refused() -> None:
    spans = _json(ANY_AGENT)["spans"]
    with pytest.raises(TraceError, match="under 'extra'"):
        normalize_traces({"traces": [{"spans": spans}], "extra": {"spans": spans}})


def test_a_grouped_trace_that_is_no_object_is_refused() -> None:
    spans = _json(ANY_AGENT)["spans"]
    with pytest.raises(TraceError, match=r"string at top level\.traces\[1\]"):
        normalize_traces({"traces": [{"spans": spans}, "trace"]}, source="t.json")


# OpenAI Agents SDK trace exports: no public recording was found; these items are written
# here in the shape of the SDK's Trace.export() and Span.export()


def _agents_items() -> list[dict[str, Any]]:
    """Hand-written: one run of an agent that calls two tools between two generations."""
    trace = "trace_0123456789abcdef0123456789abcdef"

    def span(span_id: str, parent: str | None, second: int, data: dict[str, Any]) -> dict[str, Any]:
        return {
            "object": "trace.span",
            "id": span_id,
            "trace_id": trace,
            "parent_id": parent,
            "started_at": f"2025-05-29T18:29:{second:02d}.000000+00:00",
            "ended_at": f"2025-05-29T18:29:{second + 1:02d}.000000+00:00",
            "span_data": data,
            "error": None,
        }

    ask = [{"role": "user", "content": "What is Amundi's AUM?"}]
    return [
        {"object": "trace", "id": trace, "workflow_name": "Research", "group_id": None},
        span(
            "span_agent", None, 0, {"type": "agent", "name": "Researcher", "tools": ["web_search"]}
        ),
        span(
            "span_gen1", "span_agent", 1, {"type": "generation", "input": ask, "model": "gpt-4.1"}
        ),
        span(
            "span_fn1",
            "span_agent",
            2,
            {
                "type": "function",
                "name": "web_search",
                "input": '{"query": "Amundi AUM"}',
                "output": "2.2tn",
            },
        ),
        span(
            "span_fn2",
            "span_agent",
            3,
            {
                "type": "function",
                "name": "fetch_page",
                "input": '{"url": "amundi.com"}',
                "output": "ok",
            },
        ),
        span(
            "span_gen2",
            "span_agent",
            4,
            {
                "type": "generation",
                "input": ask,
                "output": [{"role": "assistant", "content": "Amundi manages 2.2tn."}],
            },
        ),
    ]


@pytest.mark.parametrize("shape", ["array", "ingest payload", "json lines"])
def test_openai_agents_items_read_as_a_person_reads_them(shape: str) -> None:
    items = _agents_items()
    if shape == "json lines":
        from canon.gates.contracts.otel import normalize_trace_text

        execution = normalize_trace_text("\n".join(map(json.dumps, items)), source="t.jsonl")
    else:
        execution = normalize_trace(items if shape == "array" else {"data": items})
    assert execution.framework == "openai_agents"
    assert _tools(execution) == ["web_search", "fetch_page"]
    assert execution.steps[2].inputs == {"query": "Amundi AUM"}
    assert execution.input_text == "What is Amundi's AUM?"
    assert execution.output_text == "Amundi manages 2.2tn."
    assert execution.metadata["openai_agents.workflow_name"] == "Research"


def test_an_openai_agents_span_with_an_error_is_a_failed_step() -> None:
    items = _agents_items()
    items[4]["error"] = {"message": "Error running tool", "data": {"error": "timeout"}}
    call = [s for s in normalize_trace(items).steps if s.kind == "tool_call"][1]
    assert (call.name, call.status) == ("fetch_page", "error")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda i: i[3].pop("id"), r"OpenAI Agents span without an id at top level"),
        (lambda i: i[3].update(span_data="function"), "span_data is string"),
        (lambda i: i[3]["span_data"].pop("type"), "span_data is no type"),
    ],
    ids=["missing id", "span_data not an object", "span_data without a type"],
)
def test_bad_openai_agents_items_are_refused(change: Any, message: str) -> None:
    items = _agents_items()
    change(items)
    with pytest.raises(TraceError, match=message):
        normalize_trace(items, source="t.json")


# every format: a truncated file is refused with exit 2 through the CLI


@pytest.mark.parametrize(
    "path",
    [DEEPEVAL, LANGSMITH, AGENTOPS, BACKENDS / "trulens" / "test_otel_tru_custom__test_smoke.csv"],
    ids=lambda p: p.parent.name,
)
def test_a_truncated_export_is_refused_by_the_cli_with_exit_2(path: Path, tmp_path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    trace = tmp_path / f"cut{path.suffix}"
    trace.write_text(text[: len(text) // 2], encoding="utf-8")
    contract = tmp_path / "contract.yaml"
    contract.write_text(
        'name: c\nversion: "1.0.0"\nconstraints:\n  - type: must_include_steps\n    steps: [x]\n'
    )
    command = ["contract", "run", "--contract", str(contract), "--traces", str(trace)]
    result = run_canon(TESTS.parent, *command, timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert trace.name in result.stdout and "1 unreadable" in result.stdout


def test_an_object_two_new_formats_claim_is_refused_naming_both() -> None:
    # hand-written: a deepeval trace that is also a LangSmith run list
    both = copy.deepcopy(_json(DEEPEVAL))
    both["runs"] = [_run_tree()]
    with pytest.raises(TraceError, match=r"reads as both LangSmith runs .* and deepeval trace"):
        normalize_trace(both, source="t.json")


@pytest.mark.parametrize(
    "raw",
    ["span_31ebdbd71a6247e4825ac4e1", "trace_25E2e648", "run_tool_missing_time", "a_b", "0x_1"],
)
def test_a_word_id_reads_as_normalize_id_reads_it(raw: str) -> None:
    from canon.gates.contracts.otel.formats.records import record_id
    from canon.gates.contracts.otel.values import normalize_id

    assert record_id(raw) == normalize_id(raw)
    assert record_id(raw, 32) == normalize_id(raw, 32)


# TruLens event records (real: TruLens's OTel golden event tables, written by pandas as CSV)

TRULENS = BACKENDS / "trulens"
_FIRST_TRACE = (
    "\"{'trace_id': '288555431518395710920307383696401339331', 'parent_id': '', "
    "'span_id': '5309525427131891779'}\""
)


def _csv(name: str) -> str:
    return (TRULENS / name).read_text(encoding="utf-8")


def test_trulens_custom_app_event_table_reads_two_records() -> None:
    from canon.gates.contracts.otel import normalize_traces_text

    first, second = normalize_traces_text(_csv("test_otel_tru_custom__test_smoke.csv"), source="t")
    assert (first.framework, second.framework) == ("trulens", "trulens")
    # trace ids are decimal integers in the table: read as the hex OpenTelemetry shows
    assert first.execution_id == format(288555431518395710920307383696401339331, "032x")
    app = "tests.unit.test_otel_tru_custom.TestApp."
    assert [step.name for step in first.steps] == [
        "root",
        f"{app}respond_to_query",
        f"{app}nested",
        f"{app}nested2",
        f"{app}nested3",
    ]
    assert (first.input_text, first.output_text) == ("test", "answer: nested: nested2: nested3")
    # the second query throws in nested3: that step failed, the others did not
    assert (second.input_text, second.output_text) == ("throw", "answer: nested: nested2: ")
    assert [step.status for step in second.steps] == ["unset"] * 4 + ["error"]
    assert first.steps[1].kind == "agent" and first.metadata["service.name"] == "trulens"


def test_trulens_basic_app_event_table() -> None:
    from canon.gates.contracts.otel import normalize_trace_text

    execution = normalize_trace_text(_csv("test_otel_tru_basic__test_smoke.csv"), source="t")
    assert [(s.name, s.kind) for s in execution.steps] == [
        ("root", "custom"),
        ("trulens.apps.basic.TruWrapperApp._call", "agent"),
    ]
    assert (execution.input_text, execution.output_text) == ("Kojikun", "Hi, Kojikun!")


def test_trulens_rows_as_json_lines_read_as_the_csv_does() -> None:
    from canon.gates.contracts.otel import normalize_traces_text, parse_trace_text

    rows = parse_trace_text(_csv("test_otel_tru_custom__test_smoke.csv"))
    assert isinstance(rows, list)
    lines = "\n".join(json.dumps(row) for row in rows)
    from_csv = normalize_traces_text(_csv("test_otel_tru_custom__test_smoke.csv"))
    from_lines = normalize_traces_text(lines)
    assert [run.step_names() for run in from_lines] == [run.step_names() for run in from_csv]
    assert [run.output_text for run in from_lines] == [run.output_text for run in from_csv]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t.replace("'span_id': '5309525427131891779'", "'other': 1", 1), "span_id"),
        (lambda t: t.replace("\"{'name': 'root'", "\"__import__('os').getcwd()#", 1), "neither"),
        (lambda t: t.replace(",EventRecordType.SPAN,", ",", 1), r"line 2 of the event table"),
        (lambda t: t.replace(_FIRST_TRACE, '"[1, 2]"', 1), "'trace' holding JSON array"),
    ],
    ids=["a row without a span id", "code in a cell", "a row short of cells", "trace a list"],
)
def test_bad_trulens_event_tables_are_refused(change: Any, message: str) -> None:
    # bad inputs made from the recording; code in a cell is never run, only refused
    from canon.gates.contracts.otel import normalize_traces_text

    with pytest.raises(TraceError, match=message):
        normalize_traces_text(change(_csv("test_otel_tru_custom__test_smoke.csv")), source="t")


def _cycles() -> dict[str, object]:
    """Hand-written bad inputs: two tool spans naming each other as parent, per format."""
    return {
        "deepeval": {
            "uuid": "t1",
            "toolSpans": [
                {"uuid": "a1", "name": "a", "type": "tool", "parentUuid": "b2"},
                {"uuid": "b2", "name": "b", "type": "tool", "parentUuid": "a1"},
            ],
        },
        "openai-agents": [
            {
                "object": "trace.span",
                "id": "span_a",
                "trace_id": "trace_1",
                "parent_id": "span_b",
                "span_data": {"type": "function", "name": "a"},
            },
            {
                "object": "trace.span",
                "id": "span_b",
                "trace_id": "trace_1",
                "parent_id": "span_a",
                "span_data": {"type": "function", "name": "b"},
            },
        ],
        "agentops": {
            "trace_id": "1",
            "spans": [
                {
                    "span_id": "a1",
                    "parent_span_id": "b2",
                    "span_name": "a",
                    "span_type": "tool",
                    "span_attributes": {},
                },
                {
                    "span_id": "b2",
                    "parent_span_id": "a1",
                    "span_name": "b",
                    "span_type": "tool",
                    "span_attributes": {},
                },
            ],
        },
        "trulens": [
            {
                "record": {"name": "a"},
                "trace": {"trace_id": "7", "span_id": "1", "parent_id": "2"},
                "record_attributes": {"ai.observability.span_type": "tool_invocation"},
            },
            {
                "record": {"name": "b"},
                "trace": {"trace_id": "7", "span_id": "2", "parent_id": "1"},
                "record_attributes": {"ai.observability.span_type": "tool_invocation"},
            },
        ],
    }


@pytest.mark.parametrize("name", ["deepeval", "openai-agents", "agentops", "trulens"])
def test_spans_linked_in_a_cycle_are_read_or_refused_never_lost(name: str) -> None:
    try:
        (execution,) = normalize_traces(_cycles()[name], source="t.json")
    except TraceError:
        return
    assert sorted(_tools(execution)) == ["a", "b"]


_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(value=st.dictionaries(st.text(max_size=6), _VALUES, max_size=4))
def test_a_trulens_cell_reads_as_literal_eval_reads_it(value: dict[str, Any]) -> None:
    import ast

    from canon.gates.contracts.otel.formats.trulens import _literal

    text = repr(value)
    assert _literal(text) == ast.literal_eval(text)
