"""A missing required step says how the trace was read: formats, runs, spans, tool spans.

So a reader of the violation tells a misread trace (few spans, no tool spans) from a step
the agent did not take (its tool spans listed, the required one not among them).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from canon.gates.contracts import (
    Contract,
    Execution,
    Step,
    must_include_steps,
    normalize_trace,
    normalize_traces,
    parse_trace_text,
    validate,
)

TESTS = Path(__file__).resolve().parents[2]
ROOT = TESTS.parent
OPENAI = TESTS / "corpus" / "traces" / "any-agent" / "OPENAI_trace.json"
LANGFUSE = TESTS / "corpus" / "backends" / "langfuse" / "beeai-2025-08-01.trimmed.json"
MULTI = TESTS / "corpus" / "backends" / "datadog" / "test_agent_multi_trace.json"
NEEDS_SEARCH = Contract("needs-search", "1", (must_include_steps(["search"]),))


def _read(path: Path) -> Execution:
    return normalize_trace(parse_trace_text(path.read_text(), source=str(path)))


def test_the_violation_names_the_format_runs_spans_and_tool_spans():
    verdict = validate(NEEDS_SEARCH, _read(OPENAI))
    (violation,) = verdict.violations
    assert violation.message == (
        "required steps missing: search; read as span list: 1 run, 6 spans, 2 tool spans "
        "(get_current_time, write_file)"
    )
    assert violation.evidence["read"] == {
        "formats": ["span list"],
        "runs": 1,
        "spans": 6,
        "tools": ["get_current_time", "write_file"],
    }


def test_a_langfuse_export_is_named_as_read_as_langfuse():
    (violation,) = validate(NEEDS_SEARCH, _read(LANGFUSE)).violations
    assert "read as Langfuse trace export: 1 run, 12 spans, 2 tool spans" in violation.message


def test_each_run_of_a_file_of_several_says_how_many_runs_the_file_held():
    runs = normalize_traces(parse_trace_text(MULTI.read_text()), source=str(MULTI))
    assert len(runs) == 2
    for run in runs:
        (violation,) = validate(NEEDS_SEARCH, run).violations
        assert violation.evidence["read"]["runs"] == 2
        assert "read as Datadog" in violation.message


def test_an_execution_built_in_python_keeps_the_plain_message():
    execution = Execution("e1", (Step("plan", "custom"),))
    (violation,) = validate(NEEDS_SEARCH, execution).violations
    assert violation.message == "required steps missing: search"
    assert "read" not in violation.evidence


def test_canon_contract_run_prints_how_the_trace_was_read(tmp_path):
    contract = tmp_path / "contract.yaml"
    contract.write_text(
        'name: needs-search\nversion: "1.0.0"\nconstraints:\n'
        "  - type: must_include_steps\n    steps: [search]\n"
    )
    command = ["contract", "run", "--contract", str(contract), "--traces", str(OPENAI)]
    result = subprocess.run(
        [sys.executable, "-m", "canon.cli", *command, "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    (record,) = json.loads(result.stdout)["records"]
    (violation,) = record["verdict"]["violations"]
    assert "read as span list: 1 run, 6 spans, 2 tool spans" in violation["message"]
    assert violation["evidence"]["read"]["tools"] == ["get_current_time", "write_file"]
