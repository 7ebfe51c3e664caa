"""The trace-format registry: one reader module and one line per format, no guessing between
two that claim one object, and the docs' table and the error's list written from it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from canon.gates.contracts.otel import (
    TraceError,
    normalize_trace,
    normalize_traces,
    normalize_traces_text,
)
from canon.gates.contracts.otel.formats import FORMATS, REGISTRY, Registry, formats_table
from canon.gates.contracts.otel.spans import collect_spans

DOCS = Path(__file__).resolve().parents[4] / "docs"
_OTLP: dict[str, Any] = {
    "resourceSpans": [
        {
            "scopeSpans": [
                {
                    "spans": [
                        {
                            "traceId": "a" * 32,
                            "spanId": "b" * 16,
                            "name": "agent",
                            "startTimeUnixNano": "1",
                            "endTimeUnixNano": "2",
                        }
                    ]
                }
            ]
        }
    ]
}


def test_the_docs_table_of_formats_is_the_registrys() -> None:
    assert formats_table() in (DOCS / "contracts.md").read_text(encoding="utf-8")


def test_the_not_a_trace_error_lists_what_the_registry_reads() -> None:
    with pytest.raises(TraceError) as caught:
        normalize_trace({"hello": "world"}, source="in.json")
    message = str(caught.value)
    assert f"expected {REGISTRY.expected}; got a JSON object with keys ['hello']" in message
    for found in FORMATS:
        if found.expected:
            assert found.expected in message


@pytest.mark.parametrize(
    ("raw", "where", "first", "second"),
    [
        # each of these the if-chain read as the first format, silently dropping the second
        (
            {**_OTLP, "observations": [{"id": "o1", "name": "obs"}]},
            "top level",
            "OTLP JSON (otlp)",
            "Langfuse trace export (langfuse)",
        ),
        ({**_OTLP, "resourceLogs": []}, "top level", "OTLP JSON (otlp)", "OTLP JSON logs"),
        ({**_OTLP, "resourceMetrics": []}, "top level", "OTLP JSON (otlp)", "metrics"),
        (
            [
                {
                    "span_id": 1,
                    "trace_id": 2,
                    "start": 10,
                    "duration": 5,
                    "meta": {},
                    "name": "dd",
                    "id": "c" * 16,
                    "traceId": "d" * 32,
                    "timestamp": 10,
                }
            ],
            r"top level\[0\]",
            "Datadog APM (datadog)",
            "Zipkin v2 (zipkin)",
        ),
    ],
)
def test_an_object_two_formats_claim_is_refused_naming_both(
    raw: object, where: str, first: str, second: str
) -> None:
    pattern = rf"^t\.json: the object at {where} reads as both {re.escape(first)}.* and "
    with pytest.raises(TraceError, match=pattern) as caught:
        normalize_traces(raw, source="t.json")
    assert second in str(caught.value)
    assert "does not guess" in str(caught.value)


def test_a_higher_rank_is_asked_only_when_no_lower_one_claims() -> None:
    # a Datadog span has a span's marks (span_id, name) too: the generic reader yields
    start = 1_700_000_000_000_000_000
    datadog = {"span_id": 7, "trace_id": 1, "start": start, "duration": 5, "meta": {}, "name": "x"}
    (span,) = collect_spans([datadog], source="dd.json").spans
    # read as Datadog's: its own start and duration (the generic reader knows neither)
    assert (span.span_id, span.start_ns, span.end_ns) == (format(7, "016x"), start, start + 5)


def test_a_registry_refuses_a_format_registered_twice() -> None:
    with pytest.raises(ValueError, match="trace formats registered twice: zipkin"):
        Registry((*FORMATS, next(f for f in FORMATS if f.name == "zipkin")))


def test_the_worked_example_in_the_docs_reads_a_langsmith_export(
    doc_example: Callable[[str], ModuleType],
) -> None:
    example = doc_example("Adding a trace format")
    # the registry's own langsmith reader grew from this example: the example stands in for it
    registry = Registry((*(f for f in FORMATS if f.name != "langsmith"), example.FORMAT))
    trace = "0190f1d2-0000-7000-8000-000000000001"
    runs = {
        "runs": [
            {
                "id": trace,
                "trace_id": trace,
                "parent_run_id": None,
                "name": "billing_agent",
                "run_type": "chain",
                "start_time": "2025-01-01T00:00:00Z",
                "end_time": "2025-01-01T00:00:05Z",
                "inputs": {"question": "refund INV-1?"},
                "outputs": {"answer": "refunded"},
            },
            {
                "id": "0190f1d2-0000-7000-8000-000000000002",
                "trace_id": trace,
                "parent_run_id": trace,
                "name": "lookup_invoice",
                "run_type": "tool",
                "start_time": "2025-01-01T00:00:01Z",
                "end_time": "2025-01-01T00:00:02Z",
                "inputs": {"invoice": "INV-1"},
                "outputs": {"status": "paid"},
            },
            {
                "id": "0190f1d2-0000-7000-8000-000000000003",
                "trace_id": trace,
                "parent_run_id": trace,
                "name": "issue_refund",
                "run_type": "tool",
                "start_time": "2025-01-01T00:00:03Z",
                "end_time": "2025-01-01T00:00:04Z",
                "inputs": {"invoice": "INV-1"},
                "error": "refund service down",
            },
        ]
    }
    (execution,) = normalize_traces(runs, source="runs.json", registry=registry)
    assert execution.execution_id == trace.replace("-", "")
    steps = [(step.name, step.kind, step.status) for step in execution.steps]
    assert steps == [
        ("billing_agent", "custom", "ok"),
        ("lookup_invoice", "tool_call", "ok"),
        ("issue_refund", "tool_call", "error"),
    ]
    assert execution.steps[1].outputs == {"status": "paid"}
    assert "| LangSmith runs |" in formats_table(registry.formats)
    assert "a LangSmith runs export" in registry.expected
    # the built-in reader (formats/langsmith.py) reads the same calls, the failed one failed
    (builtin,) = normalize_traces(runs, source="runs.json")
    calls = [(step.name, step.status) for step in builtin.steps if step.kind == "tool_call"]
    assert calls == [("lookup_invoice", "unset"), ("issue_refund", "error")]


def test_the_text_road_refuses_an_object_two_formats_claim_too() -> None:
    # plain OTLP text takes msgspec's typed road; a second format's key sends it to the
    # collector, which refuses it rather than reading it as OTLP alone
    text = json.dumps({**_OTLP, "resourceLogs": []})
    with pytest.raises(TraceError, match="reads as both OTLP JSON"):
        normalize_traces_text(text, source="t.json")
    assert normalize_traces_text(json.dumps(_OTLP), source="t.json")[0].steps[0].name == "agent"


def test_canon_contract_generate_names_the_file_and_both_formats(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from canon.cli.contract import contract

    trace = tmp_path / "both.json"
    trace.write_text(json.dumps({**_OTLP, "resourceMetrics": []}), encoding="utf-8")
    result = CliRunner().invoke(contract, ["generate", "--traces", str(trace), "--name", "x"])
    assert result.exit_code == 2
    assert f"{trace}: the object at top level reads as both OTLP JSON" in result.output


def _objects(value: object) -> Iterator[dict[str, Any]]:
    """Every JSON object in a parsed value, nested ones too."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _documents(text: str) -> list[object]:
    """The JSON a corpus file holds: one document, or its lines that are JSON."""
    try:
        return [json.loads(text)]
    except ValueError:
        found = []
        for line in text.splitlines():
            try:
                found.append(json.loads(line))
            except ValueError:
                continue  # a console capture's text line
        return found


def test_no_format_claims_an_object_without_one_of_its_keys() -> None:
    # the registry asks an object only the formats its keys name: a format claiming an
    # object that holds none of its keys would never be asked about it
    corpus = Path(__file__).resolve().parents[3] / "corpus"
    paths = sorted(p for p in corpus.rglob("*") if p.suffix in (".json", ".jsonl"))
    assert len(paths) > 80
    checked = 0
    for path in paths:
        for document in _documents(path.read_text(encoding="utf-8")):
            for item in _objects(document):
                for found in FORMATS:
                    if found.claims(item):
                        assert not set(found.keys).isdisjoint(item), (path.name, found.name)
                        checked += 1
    assert checked > 1000


def test_a_wide_object_is_recognized_without_being_remembered() -> None:
    wide = {**_OTLP, **{f"extra_{number}": number for number in range(100)}}
    (execution,) = normalize_traces(wide, source="wide.json")
    assert execution.steps[0].name == "agent"
    with pytest.raises(TraceError, match="reads as both OTLP JSON"):
        normalize_traces({**wide, "resourceLogs": []}, source="wide.json")


@pytest.mark.parametrize("key", ["raw_otel_json", "sessionSpans"])
def test_a_session_key_holding_broken_json_text_is_named(key: str) -> None:
    with pytest.raises(TraceError) as caught:
        normalize_traces([{"timestamp": "t", key: '{"resourceSpans": ['}], source="rows.json")
    assert str(caught.value).startswith("rows.json: not a trace: expected ")
    assert f"got text under '{key}' at top level[0] that is not a JSON object" in str(caught.value)
