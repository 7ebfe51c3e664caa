"""An object that holds spans (or runs, observations, traces) is a container, never a span.

Read as one span, such an object loses every step it holds without an error: the contract
gate would then fail a run for a tool it did call. Each export is either read with the
same executions, wrapped or not, or refused with a ``TraceError``.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from canon.gates.contracts.otel import TraceError, normalize_traces, parse_trace_text
from tests.support.corpus import TESTS, TRACE_FILES

ROOT = TESTS.parent
OPENAI = TESTS / "corpus" / "traces" / "any-agent" / "OPENAI_trace.json"
TRACE_FIELDS = {"name": "agent run", "startTime": "2025-01-01T00:00:00Z"}


def _executions(raw: object) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """What a reader sees of each run: its steps, and its tool calls in order."""
    return [
        (
            tuple(step.name for step in run.steps),
            tuple(step.name for step in run.steps if step.kind == "tool_call"),
        )
        for run in normalize_traces(raw)
    ]


# event tables written as CSV (TruLens): read through parse_trace_text as the rest
CSV_FILES = sorted((TESTS / "corpus" / "backends").rglob("*.csv"))


def _readable() -> list[Path]:
    out = []
    for path in [*TRACE_FILES, *CSV_FILES]:
        try:
            _executions(parse_trace_text(path.read_text(encoding="utf-8")))
        except TraceError:
            continue
        out.append(path)
    return out


READABLE = _readable()
_RAW: dict[Path, object] = {}


def _raw(path: Path) -> Any:
    if path not in _RAW:
        _RAW[path] = parse_trace_text(path.read_text(encoding="utf-8"))
    return json.loads(json.dumps(_RAW[path]))  # a fresh copy for each wrapping


def test_trace_fields_beside_a_list_of_spans_are_refused_not_read_as_one_span():
    spans = _raw(OPENAI)["spans"]
    assert _executions({"spans": spans})[0][1] == ("get_current_time", "write_file")
    # before the fix: read as one span named "agent run", its two tool calls lost
    with pytest.raises(TraceError) as raised:
        normalize_traces({**TRACE_FIELDS, "stepSpans": spans})
    message = str(raised.value)
    assert "under 'stepSpans'" in message
    assert f"{len(spans)} span-like object(s)" in message
    assert "at top level" in message


def test_trace_fields_beside_an_envelope_read_it_as_its_container():
    otlp = TESTS / "corpus" / "real-traces" / "otel-proto" / "trace.json"
    raw = _raw(otlp)
    # before the fix: read as one span named "agent run"
    assert _executions({**TRACE_FIELDS, "data": raw}) == _executions(raw)


def test_a_span_in_a_span_list_holding_child_spans_is_refused():
    spans = _raw(OPENAI)["spans"]
    parent = {**spans[0], "children": spans[1:]}
    with pytest.raises(TraceError, match="under 'children'"):
        normalize_traces({"spans": [parent]})


def test_a_bare_array_element_holding_spans_is_refused_naming_its_position():
    spans = _raw(OPENAI)["spans"]
    with pytest.raises(TraceError, match=r"top level\[0\].*under 'runs'"):
        normalize_traces([{**TRACE_FIELDS, "runs": spans}])


def test_a_span_s_own_events_links_and_attributes_keep_it_a_span():
    span = {
        "name": "tool",
        "context": {"trace_id": "0x1", "span_id": "0x2"},
        "start_time": "2025-01-01T00:00:00Z",
        "attributes": {"gen_ai.tool.name": "search"},
        "events": [{"name": "event", "timestamp": "2025-01-01T00:00:00Z"}],
        "links": [{"context": {"trace_id": "0x1", "span_id": "0x3"}}],
    }
    assert len(_executions(span)[0][0]) == 1


_WRAPS = st.sampled_from(
    [
        "fields",
        "fields+spans",
        "fields+data",
        "fields+trace",
        "fields+children",
        "data",
        "trace",
        "array",
    ]
)
_FIELDS = st.dictionaries(
    st.sampled_from(["name", "startTime", "id", "timestamp", "metadata", "uuid", "endTime"]),
    st.one_of(
        st.text(min_size=1, max_size=8),
        st.just("2025-01-01T00:00:00Z"),
        st.dictionaries(st.sampled_from(["user", "tags"]), st.text(max_size=4), max_size=2),
    ),
    min_size=1,
)


def _wrap(raw: Any, how: str, fields: dict[str, Any]) -> object:
    listed = raw if isinstance(raw, list) else [raw]
    wraps = {
        "fields": {**fields, **raw} if isinstance(raw, dict) else {**fields, "items": raw},
        "fields+spans": {**fields, "spans": listed},
        "fields+data": {**fields, "data": raw},
        "fields+trace": {**fields, "trace": raw},
        "fields+children": {**fields, "children": listed},
        "data": {"data": raw},
        "trace": {"trace": raw},
        "array": [raw],
    }
    return wraps[how]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(READABLE), how=_WRAPS, fields=_FIELDS)
def test_a_wrapped_export_reads_as_itself_or_is_refused(path, how, fields):
    expected = _executions(_raw(path))
    wrapped = _wrap(_raw(path), how, fields)
    try:
        got = _executions(wrapped)
    except TraceError:
        return  # refused, with the reason: never a silent misreading
    assert got == expected, f"{path.name} wrapped as {how} read differently"


_span_names = st.lists(st.sampled_from(["search", "lookup", "reply", "plan"]), min_size=1)


@settings(max_examples=60, deadline=None)
@given(tools=_span_names, how=_WRAPS, fields=_FIELDS)
def test_a_generated_span_list_wrapped_reads_as_itself_or_is_refused(tools, how, fields):
    spans = [
        {
            "name": "agent",
            "context": {"trace_id": "0x1", "span_id": "0x100"},
            "start_time": "2025-01-01T00:00:00Z",
            "attributes": {"gen_ai.operation.name": "invoke_agent"},
        }
    ] + [
        {
            "name": f"execute_tool {tool}",
            "context": {"trace_id": "0x1", "span_id": hex(0x200 + at)},
            "parent": {"span_id": "0x100"},
            "start_time": f"2025-01-01T00:00:{at:02d}Z",
            "attributes": {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool},
        }
        for at, tool in enumerate(tools, start=1)
    ]
    expected = _executions({"spans": spans})
    assert expected[0][1] == tuple(tools)
    try:
        got = _executions(_wrap({"spans": spans}, how, fields))
    except TraceError:
        return
    assert got == expected


def _new_formats(tools: list[str]) -> dict[str, object]:
    """One generated export per format of issue 24's section 2, calling ``tools`` in order."""
    times = [f"2025-01-01T00:{at // 60:02d}:{at % 60:02d}Z" for at in range(len(tools) + 1)]
    run_tree = {
        "id": "r0",
        "name": "agent",
        "run_type": "chain",
        "start_time": times[0],
        "child_runs": [
            {"id": f"r{at}", "name": tool, "run_type": "tool", "start_time": times[at]}
            for at, tool in enumerate(tools, start=1)
        ],
    }
    deepeval = {
        "uuid": "t1",
        "name": "agent run",
        "startTime": times[0],
        "agentSpans": [{"uuid": "a0", "name": "agent", "type": "agent", "startTime": times[0]}],
        "toolSpans": [
            {
                "uuid": f"s{at}",
                "name": tool,
                "type": "tool",
                "parentUuid": "a0",
                "startTime": times[at],
            }
            for at, tool in enumerate(tools, start=1)
        ],
    }
    agents = [
        {
            "object": "trace.span",
            "id": "span_0",
            "trace_id": "trace_1",
            "started_at": times[0],
            "span_data": {"type": "agent", "name": "agent"},
        },
    ] + [
        {
            "object": "trace.span",
            "id": f"span_{at}",
            "trace_id": "trace_1",
            "parent_id": "span_0",
            "started_at": times[at],
            "span_data": {"type": "function", "name": tool},
        }
        for at, tool in enumerate(tools, start=1)
    ]
    agentops = {
        "trace_id": "1",
        "spans": [
            {"span_id": "a", "span_name": "agent", "span_type": "agent", "span_attributes": {}}
        ]
        + [
            {
                "span_id": f"b{at}",
                "parent_span_id": "a",
                "span_name": tool,
                "span_type": "tool",
                "span_attributes": {"tool": {"name": tool}},
            }
            for at, tool in enumerate(tools, start=1)
        ],
    }
    trulens = [
        {
            "record": {"name": "root"},
            "trace": {"trace_id": "7", "span_id": "1", "parent_id": ""},
            "record_attributes": {"ai.observability.span_type": "record_root"},
            "start_timestamp": times[0],
        }
    ] + [
        {
            "record": {"name": tool},
            "trace": {"trace_id": "7", "span_id": str(at + 1), "parent_id": "1"},
            "record_attributes": {"ai.observability.span_type": "tool_invocation"},
            "start_timestamp": times[at],
        }
        for at, tool in enumerate(tools, start=1)
    ]
    return {
        "trulens": trulens,
        "langsmith": run_tree,
        "deepeval": deepeval,
        "openai-agents": agents,
        "agentops": agentops,
        "grouped": {"traces": [agentops]},
    }


@settings(max_examples=100, deadline=None)
@given(
    tools=_span_names,
    format_name=st.sampled_from(
        ["langsmith", "deepeval", "openai-agents", "agentops", "grouped", "trulens"]
    ),
    how=_WRAPS,
    fields=_FIELDS,
)
def test_a_generated_export_of_each_new_format_wrapped_reads_as_itself_or_is_refused(
    tools, format_name, how, fields
):
    export = _new_formats(tools)[format_name]
    expected = _executions(export)
    assert expected[0][1] == tuple(tools)
    try:
        got = _executions(_wrap(json.loads(json.dumps(export)), how, fields))
    except TraceError:
        return
    assert got == expected


def test_canon_contract_run_refuses_a_container_read_as_a_span(tmp_path):
    trace = tmp_path / "wrapped.json"
    trace.write_text(json.dumps({**TRACE_FIELDS, "stepSpans": _raw(OPENAI)["spans"]}))
    contract = tmp_path / "contract.yaml"
    contract.write_text(
        'name: needs-time\nversion: "1.0.0"\nconstraints:\n'
        "  - type: must_include_steps\n    steps: [get_current_time]\n"
    )
    command = ["contract", "run", "--contract", str(contract), "--traces", str(trace)]
    result = subprocess.run(
        [sys.executable, "-m", "canon.cli", *command],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "under 'stepSpans'" in result.stdout
    assert "0 passed, 0 failed, 0 warned, 1 unreadable" in result.stdout


_PARENTS = ("parent", "parentSpanContext", "references")  # keys whose span id is a parent's


def _span_ids(value: object, out: set[str], key: str = "") -> set[str]:
    """Every span id a file holds (a span's own, not a parent's), wherever it sits."""
    if isinstance(value, dict):
        for inner, held in value.items():
            own = inner in ("spanId", "span_id", "spanID") and key not in _PARENTS
            if own and isinstance(held, str | int) and str(held).strip("0"):
                out.add(str(held))
            _span_ids(held, out, inner)
    elif isinstance(value, list):
        for inner in value:
            _span_ids(inner, out, key)
    elif isinstance(value, str) and value.lstrip().startswith("{"):
        with contextlib.suppress(ValueError):
            _span_ids(json.loads(value), out, key)  # spans written as JSON text
    return out


@pytest.mark.parametrize("path", READABLE, ids=lambda path: path.name)
def test_every_corpus_file_reads_a_step_for_each_span_id_it_holds(path):
    raw = _raw(path)
    steps = sum(len(run.steps) for run in normalize_traces(raw, source=path.name))
    assert steps >= len(_span_ids(raw, set()))
    # the same file under trace-level fields: never fewer steps without an error
    try:
        wrapped = sum(len(run.steps) for run in normalize_traces({**TRACE_FIELDS, "items": raw}))
    except TraceError:
        return
    assert wrapped == steps
