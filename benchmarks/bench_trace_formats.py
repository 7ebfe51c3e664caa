"""Benchmark: reading each trace format through the collector (the format registry's road).

Builds 40 deterministic traces of 200 spans in each of the shapes the collector reads
element by element or document by document (Datadog arrays, Zipkin arrays, a Jaeger
query response, a bare array of Jaeger spans, an OTel SDK span list, OTLP JSON lines, a
Langfuse export, a LangSmith run tree, a deepeval trace, an AgentOps export, OpenAI Agents
SDK items as JSON lines, grouped traces, TruLens's event table as CSV and as JSON lines)
and prints the best CPU time per span of ``collect_spans`` (finding and reading the spans:
where the registry asks its formats), of
``normalize_traces`` (everything up to the ``Execution``) and of ``normalize_traces_text``
(from the file's text, as the CLI reads it), best of ``--repeats`` rounds, each with its
ratio to a Collector file exporter's OTLP JSON lines (a batch of 50 spans a line). Run it
against two trees with PYTHONPATH to compare them:

    .venv/bin/python benchmarks/bench_trace_formats.py [--repeats 7] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import ast
import csv
import gc
import io
import json
import time
from collections.abc import Callable
from typing import Any

from canon.gates.contracts.otel import normalize_traces, normalize_traces_text
from canon.gates.contracts.otel.spans import collect_spans

TRACES = 40
SPANS = 200
START = 1_711_000_000_000_000_000
TOOLS = ("lookup_invoice", "check_policy", "issue_refund", "notify")


def _plan(trace: int) -> list[tuple[int, int, str, dict[str, Any]]]:
    """(span number, parent number, name, attributes) of one trace: agent, chats, tools."""
    spans: list[tuple[int, int, str, dict[str, Any]]] = [
        (0, -1, "invoke_agent billing", {"gen_ai.operation.name": "invoke_agent"})
    ]
    for number in range(1, SPANS):
        if number % 2:
            attrs = {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 400}
            spans.append((number, 0, "chat", attrs))
        else:
            tool = TOOLS[(number + trace) % len(TOOLS)]
            attrs = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.result": '{"ok": true}',
            }
            spans.append((number, 0, f"execute_tool {tool}", attrs))
    return spans


def _datadog(trace: int) -> object:
    return [
        [
            {
                "trace_id": trace + 1,
                "span_id": trace * 1000 + number + 1,
                "parent_id": trace * 1000 + parent + 1 if parent >= 0 else 0,
                "name": name,
                "resource": name,
                "service": "billing",
                "start": START + number * 1000,
                "duration": 900,
                "meta": {k: str(v) for k, v in attrs.items()},
                "metrics": {},
            }
            for number, parent, name, attrs in _plan(trace)
        ]
    ]


def _zipkin(trace: int) -> object:
    return [
        {
            "traceId": f"{trace + 1:032x}",
            "id": f"{number + 1:016x}",
            **({"parentId": f"{parent + 1:016x}"} if parent >= 0 else {}),
            "name": name,
            "timestamp": (START + number * 1000) // 1000,
            "duration": 1,
            "localEndpoint": {"serviceName": "billing"},
            "tags": {k: str(v) for k, v in attrs.items()},
        }
        for number, parent, name, attrs in _plan(trace)
    ]


def _jaeger_spans(trace: int) -> list[dict[str, Any]]:
    return [
        {
            "traceID": f"{trace + 1:032x}",
            "spanID": f"{number + 1:016x}",
            "operationName": name,
            "references": (
                [{"refType": "CHILD_OF", "spanID": f"{parent + 1:016x}"}] if parent >= 0 else []
            ),
            "startTime": (START + number * 1000) // 1000,
            "duration": 1,
            "tags": [{"key": k, "type": "string", "value": str(v)} for k, v in attrs.items()],
            "processID": "p1",
        }
        for number, parent, name, attrs in _plan(trace)
    ]


def _jaeger(trace: int) -> object:
    processes = {"p1": {"serviceName": "billing", "tags": []}}
    return {
        "data": [
            {"traceID": f"{trace + 1:032x}", "spans": _jaeger_spans(trace), "processes": processes}
        ]
    }


def _sdk(trace: int) -> object:
    return {
        "spans": [
            {
                "name": name,
                "context": {"trace_id": f"0x{trace + 1:032x}", "span_id": f"0x{number + 1:016x}"},
                "parent_id": f"0x{parent + 1:016x}" if parent >= 0 else None,
                "start_time": "2024-03-21T05:46:40.000000Z",
                "end_time": "2024-03-21T05:46:41.000000Z",
                "status": {"status_code": "OK"},
                "attributes": attrs,
            }
            for number, parent, name, attrs in _plan(trace)
        ]
    }


def _otlp_lines(trace: int) -> object:
    """OTLP JSON lines: one document per span (what a per-span exporter writes)."""
    return [
        {
            "resourceSpans": [
                {
                    "scopeSpans": [
                        {
                            "scope": {"name": "billing"},
                            "spans": [
                                {
                                    "traceId": f"{trace + 1:032x}",
                                    "spanId": f"{number + 1:016x}",
                                    "parentSpanId": f"{parent + 1:016x}" if parent >= 0 else "",
                                    "name": name,
                                    "startTimeUnixNano": str(START + number * 1000),
                                    "endTimeUnixNano": str(START + number * 1000 + 900),
                                    "attributes": [
                                        {"key": k, "value": {"stringValue": str(v)}}
                                        for k, v in attrs.items()
                                    ],
                                }
                            ],
                        }
                    ]
                }
            ]
        }
        for number, parent, name, attrs in _plan(trace)
    ]


def _collector_lines(trace: int) -> object:
    """A Collector file exporter's JSON lines: one document per batch of 50 spans."""
    lines = _otlp_lines(trace)
    assert isinstance(lines, list)
    batches = []
    for first in range(0, len(lines), 50):
        spans = [
            line["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
            for line in lines[first : first + 50]
        ]
        batches.append(
            {"resourceSpans": [{"scopeSpans": [{"scope": {"name": "billing"}, "spans": spans}]}]}
        )
    return batches


def _langfuse(trace: int) -> object:
    return {
        "trace": {"id": f"{trace + 1:032x}", "output": "refunded"},
        "observations": [
            {
                "id": f"{number + 1:016x}",
                "parentObservationId": f"{parent + 1:016x}" if parent >= 0 else None,
                "name": name,
                "type": "TOOL" if "tool" in name else "GENERATION",
                "startTime": "2024-03-21T05:46:40.000Z",
                "endTime": "2024-03-21T05:46:41.000Z",
                "metadata": {"attributes": attrs},
            }
            for number, parent, name, attrs in _plan(trace)
        ],
    }


def _iso(number: int) -> str:
    """The start of span ``number`` as ISO text (ms apart, as the tools write them)."""
    return f"2024-03-21T05:46:{40 + number // 1000:02d}.{number % 1000:03d}Z"


def _kind(name: str) -> str:
    return "tool" if name.startswith("execute_tool") else "llm" if name == "chat" else "chain"


def _langsmith(trace: int) -> object:
    """A LangSmith run tree: the agent run with every other run in its ``child_runs``."""
    (_, _, root_name, _), *children = _plan(trace)
    return {
        "id": f"00000000-0000-0000-0000-{trace + 1:012x}",
        "name": root_name,
        "run_type": "chain",
        "start_time": _iso(0),
        "inputs": {"messages": [{"role": "user", "content": "refund INV-1?"}]},
        "child_runs": [
            {
                "id": f"{number + 1:08x}-0000-0000-0000-{trace + 1:012x}",
                "name": name.removeprefix("execute_tool "),
                "run_type": _kind(name),
                "start_time": _iso(number),
                "end_time": _iso(number + 1),
                "inputs": {"invoice": "INV-1"},
                "outputs": {"ok": True},
            }
            for number, _, name, _ in children
        ],
    }


def _deepeval(trace: int) -> object:
    lists: dict[str, list[dict[str, Any]]] = {"agentSpans": [], "llmSpans": [], "toolSpans": []}
    for number, parent, name, _ in _plan(trace):
        kind = "agent" if parent < 0 else "tool" if "tool" in name else "llm"
        lists[f"{kind}Spans"].append(
            {
                "uuid": f"{number + 1:016x}",
                "name": name,
                "type": kind,
                "status": "SUCCESS",
                "parentUuid": f"{parent + 1:016x}" if parent >= 0 else None,
                "startTime": _iso(number),
                "endTime": _iso(number + 1),
                "input": "refund INV-1?",
                "output": '{"ok": true}',
            }
        )
    return {"uuid": f"{trace + 1:032x}", "name": "billing", "startTime": _iso(0), **lists}


def _agentops(trace: int) -> object:
    return {
        "trace_id": f"{trace + 1:032x}",
        "spans": [
            {
                "span_id": f"{number + 1:016x}",
                "parent_span_id": f"{parent + 1:016x}" if parent >= 0 else "",
                "span_name": name,
                "span_kind": "Internal",
                "start_time": _iso(number),
                "duration": 900,
                "status_code": "Unset",
                "resource_attributes": {"service.name": "billing"},
                "span_attributes": {
                    "gen_ai": {"operation": {"name": attrs["gen_ai.operation.name"]}},
                    **({"tool": {"name": attrs["gen_ai.tool.name"]}} if "tool" in name else {}),
                },
                "span_type": "agent" if parent < 0 else "tool" if "tool" in name else "request",
            }
            for number, parent, name, attrs in _plan(trace)
        ],
    }


_ASK = [{"role": "user", "content": "refund INV-1?"}]
_SAY = [{"role": "assistant", "content": "refunded"}]


def _openai_agents(trace: int) -> object:
    items: list[dict[str, Any]] = [{"object": "trace", "id": f"trace_{trace + 1:032x}"}]
    for number, parent, name, _ in _plan(trace):
        if parent < 0:
            data: dict[str, Any] = {"type": "agent", "name": name}
        elif "tool" in name:
            data = {"type": "function", "name": name.removeprefix("execute_tool ")}
            data |= {"input": '{"invoice": "INV-1"}', "output": '{"ok": true}'}
        else:
            data = {"type": "generation", "model": "gpt-4.1", "input": _ASK, "output": _SAY}
        items.append(
            {
                "object": "trace.span",
                "id": f"span_{number + 1:024x}",
                "trace_id": f"trace_{trace + 1:032x}",
                "parent_id": f"span_{parent + 1:024x}" if parent >= 0 else None,
                "started_at": _iso(number),
                "ended_at": _iso(number + 1),
                "span_data": data,
                "error": None,
            }
        )
    return items


def _trulens(trace: int) -> object:
    """TruLens event records as pandas writes its event table: dict cells as their repr."""
    rows = []
    for number, parent, name, attrs in _plan(trace):
        span_type = (
            "record_root" if parent < 0 else "tool_invocation" if "tool" in name else "generation"
        )
        rows.append(
            {
                "record": repr({"name": name, "kind": 1, "status": "STATUS_CODE_UNSET"}),
                "event_id": str(number + 1),
                "record_attributes": repr(
                    {"name": name, "ai.observability.span_type": span_type, **attrs}
                ),
                "record_type": "EventRecordType.SPAN",
                "start_timestamp": _iso(number).replace("T", " ").rstrip("Z"),
                "timestamp": _iso(number + 1).replace("T", " ").rstrip("Z"),
                "trace": repr(
                    {
                        "trace_id": str(trace + 1),
                        "parent_id": str(parent + 1) if parent >= 0 else "",
                        "span_id": str(number + 1),
                    }
                ),
            }
        )
    return rows


def _grouped(trace: int) -> object:
    sdk = _sdk(trace)
    assert isinstance(sdk, dict)
    return {"traces": [sdk]}


WORKLOADS: dict[str, Callable[[int], object]] = {
    "datadog": _datadog,
    "zipkin": _zipkin,
    "jaeger query": _jaeger,
    "jaeger spans": lambda trace: _jaeger_spans(trace),
    "sdk span list": _sdk,
    "otlp json lines": _otlp_lines,
    "collector lines": _collector_lines,
    "langfuse": _langfuse,
    "langsmith tree": _langsmith,
    "deepeval": _deepeval,
    "agentops": _agentops,
    "openai agents": _openai_agents,
    "grouped traces": _grouped,
    "trulens csv": _trulens,
    "trulens lines": lambda trace: [
        {key: ast.literal_eval(cell) if cell[:1] == "{" else cell for key, cell in row.items()}
        for row in _trulens(trace)  # type: ignore[attr-defined]
    ],
}
REFERENCE = "collector lines"  # what a Collector's file exporter writes: a batch a line


def _text(name: str, raw: object) -> str:
    """A trace as its file holds it: JSON lines for the line formats, CSV for TruLens's
    event table, else one document."""
    if name == "trulens csv" and isinstance(raw, list):
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(raw[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(raw)
        return out.getvalue()
    if name in (REFERENCE, "otlp json lines", "openai agents", "trulens lines") and isinstance(
        raw, list
    ):
        return "\n".join(json.dumps(item) for item in raw)
    return json.dumps(raw)


def _best(step: Callable[[object], object], traces: list[object], repeats: int) -> float:
    """Best CPU seconds per trace of ``step`` over ``traces``."""
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        started = time.process_time()
        for trace in traces:
            step(trace)
        best = min(best, (time.process_time() - started) / len(traces))
    return best


def main() -> None:
    """Build the workloads and print the best time per trace of each stage."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--only", nargs="*", default=None, help="workload names to run (default: all)"
    )
    args = parser.parse_args()
    names = [name for name in WORKLOADS if not args.only or name in args.only]
    if REFERENCE not in names:
        names.insert(0, REFERENCE)  # the ratios are to it
    found: dict[str, tuple[float, float, float]] = {}
    for name in names:
        traces = [WORKLOADS[name](trace) for trace in range(TRACES)]
        texts = [_text(name, raw) for raw in traces]
        collect = _best(lambda raw: collect_spans(raw, source="bench"), traces, args.repeats)
        whole = _best(lambda raw: normalize_traces(raw, source="bench"), traces, args.repeats)
        text = _best(
            lambda raw: normalize_traces_text(str(raw), source="bench"), texts, args.repeats
        )
        found[name] = (collect, whole, text)
    base = found[REFERENCE]
    print(f"per span, best of {args.repeats}; x = ratio to {REFERENCE} (the Collector's files)")
    for name, (collect, whole, text) in found.items():
        print(
            f"{name:<16} collect {collect / SPANS * 1e6:6.2f} us ({collect / base[0]:4.2f}x)   "
            f"normalize {whole / SPANS * 1e6:6.2f} us ({whole / base[1]:4.2f}x)   "
            f"from text {text / SPANS * 1e6:6.2f} us ({text / base[2]:4.2f}x)"
        )


if __name__ == "__main__":
    main()
