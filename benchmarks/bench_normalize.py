"""Benchmark: OTel trace normalization throughput (spans/s and traces/s).

Builds 100 deterministic OTLP JSON traces of 200 spans each (Strands-like: an agent root,
event-loop cycles, chat spans with token usage, tool spans with JSON arguments and results,
KV-list attributes with protobuf-JSON string ints), then times ``normalize_trace`` on the
parsed dicts, and separately ``parse_trace_text`` + ``normalize_trace`` on the JSON text.

    .venv/bin/python benchmarks/bench_normalize.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from canon.gates.contracts.otel import normalize_trace, parse_trace_text

TRACES = 100
SPANS_PER_TRACE = 200
TOOLS = ("lookup_formulary", "check_coverage", "render_decision", "search_kb", "notify")


def _attr(key: str, value: object) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _span(
    trace: int, number: int, parent: str, name: str, attrs: dict[str, object]
) -> dict[str, Any]:
    start = 1_711_000_000_000_000_000 + trace * 10_000_000_000 + number * 1_000_000
    return {
        "traceId": f"{trace:032x}",
        "spanId": f"{trace:08x}{number:08x}",
        "parentSpanId": parent,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 900_000),
        "status": {"code": 1},
        "attributes": [_attr(key, value) for key, value in attrs.items()],
    }


def build_trace(trace: int) -> dict[str, Any]:
    """One 200-span OTLP JSON trace, deterministic in ``trace``."""
    root_id = f"{trace:08x}{0:08x}"
    request = json.dumps([{"role": "user", "content": f"Process claim {trace}"}])
    answer = json.dumps([{"role": "assistant", "content": "Approved per Section 4.2.1."}])
    spans = [
        _span(
            trace,
            0,
            "",
            "invoke_agent claims",
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.input.messages": request,
                "gen_ai.output.messages": answer,
            },
        )
    ]
    cycle = root_id
    for number in range(1, SPANS_PER_TRACE):
        slot = number % 4
        if slot == 1:
            spans.append(
                _span(trace, number, root_id, "execute_event_loop_cycle", {"cycle": number})
            )
            cycle = spans[-1]["spanId"]
        elif slot == 2:
            attrs: dict[str, object] = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "claude",
                "gen_ai.usage.input_tokens": 400 + number,
                "gen_ai.usage.output_tokens": 80,
            }
            spans.append(_span(trace, number, cycle, "chat", attrs))
        else:
            tool = TOOLS[number % len(TOOLS)]
            attrs = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.arguments": json.dumps({"member_id": f"M{number}"}),
                "gen_ai.tool.call.result": json.dumps({"ok": True, "tier": number % 3}),
            }
            spans.append(_span(trace, number, cycle, f"execute_tool {tool}", attrs))
    resource = {"attributes": [_attr("service.name", "claims-agent")]}
    scope = {"scope": {"name": "strands.agent"}, "spans": spans}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [scope]}]}


def _time(run: Any, repeats: int) -> list[float]:
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        timings.append(time.perf_counter() - started)
    return timings


def main() -> None:
    """Run the benchmark and print medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    traces = [build_trace(number) for number in range(TRACES)]
    texts = [json.dumps(trace) for trace in traces]
    spans = TRACES * SPANS_PER_TRACE

    def normalize_all() -> None:
        for trace in traces:
            normalize_trace(trace)

    def parse_and_normalize_all() -> None:
        for text in texts:
            normalize_trace(parse_trace_text(text))

    normalize_all()  # warm-up
    for label, run in (
        ("normalize(dict)", normalize_all),
        ("parse+normalize", parse_and_normalize_all),
    ):
        timings = _time(run, args.repeats)
        # the minimum is the least disturbed run on a shared machine; the median is shown too
        for stat, value in (("median", statistics.median(timings)), ("best", min(timings))):
            print(
                f"{label:16s} {stat:6s} {value * 1000:8.1f} ms / {TRACES} traces  "
                f"{TRACES / value:8.0f} traces/s  {spans / value:10.0f} spans/s  "
                f"{value / TRACES * 1000:.3f} ms/trace"
            )


if __name__ == "__main__":
    main()
