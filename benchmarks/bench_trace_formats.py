"""Benchmark: reading each trace format through the collector (the format registry's road).

Builds 40 deterministic traces of 200 spans in each of the shapes the collector reads
element by element or document by document (Datadog arrays, Zipkin arrays, a Jaeger
query response, a bare array of Jaeger spans, an OTel SDK span list, OTLP JSON lines, a
Langfuse export) and prints the best CPU time per trace of ``collect_spans`` (finding and
reading the spans: where the registry asks its formats) and of ``normalize_traces``
(everything up to the ``Execution``), best of ``--repeats`` rounds. Run it against two
trees with PYTHONPATH to compare them:

    .venv/bin/python benchmarks/bench_trace_formats.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from typing import Any

from canon.gates.contracts.otel import normalize_traces
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


WORKLOADS: dict[str, Callable[[int], object]] = {
    "datadog": _datadog,
    "zipkin": _zipkin,
    "jaeger query": _jaeger,
    "jaeger spans": lambda trace: _jaeger_spans(trace),
    "sdk span list": _sdk,
    "otlp json lines": _otlp_lines,
    "langfuse": _langfuse,
}


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
    args = parser.parse_args()
    for name, build in WORKLOADS.items():
        traces = [build(trace) for trace in range(TRACES)]
        collect = _best(lambda raw: collect_spans(raw, source="bench"), traces, args.repeats)
        whole = _best(lambda raw: normalize_traces(raw, source="bench"), traces, args.repeats)
        print(
            f"{name:<16} collect spans {collect * 1e6:8.1f} us/trace   "
            f"normalize {whole * 1e6:8.1f} us/trace  ({SPANS} spans)"
        )


if __name__ == "__main__":
    main()
