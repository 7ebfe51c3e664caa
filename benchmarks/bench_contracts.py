"""Trace-contract gate vs the reference package, on the same traces and contracts.

Usage: python benchmarks/bench_contracts.py [--abc-venv /tmp/abc-venv] [--rounds 5]
       [--only NAME]

The reference (``agentic-behavioral-contracts==0.2.0``) lives in its own venv and is
timed there in a child process; it is never a dependency of Canon. Each workload builds
deterministic OTLP traces (100 of 200 spans, or 20 of 2,000) in a scratch folder and a
5-constraint contract (parametric, 3 required steps, an ordering, 2 sources, citations
gated by a ``when:``). The workloads: Strands-scoped traces; generic GenAI traces (an
instrumentation scope no framework rule knows, so framework detection finds nothing);
each ``when:`` kind (``input_matches``, ``tool_result_matches``, ``step_present``,
``metadata``) on generic traces; and 2,000-span generic traces.
Both sides load the same files, parse them up front, and are timed in their own process
on the same parsed dicts (and again including ``json.loads`` of the text). The two sides
take turns chunk by chunk (``--chunk`` 200-span traces, or the same number of spans of
2,000-span traces), which side goes first alternating, because a shared virtual machine's
speed drifts by a third within a second: each pair of chunks sees the same speed. Both
sides run on one CPU (``--cpu``), since one core can be slower than the other for a while.
Each side moves its loaded inputs (100 parsed traces, ~150k container objects) out of the
cyclic GC with ``gc.freeze()`` before timing: otherwise every full collection rescans
them (~90 ms each, in both processes), a cost of the harness holding every trace at once
that a CLI run reading one file at a time does not have.
Prints the median and best time per trace over ``--rounds`` rounds and the median of the
paired ratios (reference time / Canon time of the same chunk, the steadiest figure on a
shared machine), then the wall time of one CLI call over the 100
files. From text Canon reads as its CLI does (``normalize_trace_text``): with msgspec
(a dependency), plain OTLP JSON into typed structs, else into dicts; ``--json-parser json``
blocks msgspec, to time Canon where it cannot be imported; the first line names the parser
that ran.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

TRACES, SPANS = 100, 200
GENERIC_SCOPE = "acme.agent.telemetry"  # no framework rule knows it
TOOLS = ("lookup_formulary", "check_coverage", "search_notes", "fetch_history", "render_decision")
CONTRACT = """\
name: bench-claims
version: "1.0.0"
constraints:
  - type: must_not_use_only_parametric_knowledge
  - type: must_include_steps
    steps: [lookup_formulary, check_coverage, render_decision]
  - type: must_precede
    before: check_coverage
    after: render_decision
  - type: must_retrieve_from
    sources: [formulary-db, coverage-policy]
  - type: must_contain_citations
    min_count: 1
    when:
      WHEN
"""
WHEN_KINDS = {
    "input_matches": "input_matches: claim",
    "tool_result_matches": "tool_result_matches: {tool: check_coverage, key: coverage_active, "
    "value: true}",
    "step_present": "step_present: render_decision",
    "metadata": "metadata: {claim_type: rx}",
}
# (name, spans per trace, traces, instrumentation scope, when: kind)
WORKLOADS = (
    ("strands 200", 200, 100, "strands", "input_matches"),
    ("generic 200", 200, 100, GENERIC_SCOPE, "input_matches"),
    ("generic tool_result", 200, 100, GENERIC_SCOPE, "tool_result_matches"),
    ("generic step_present", 200, 100, GENERIC_SCOPE, "step_present"),
    ("generic metadata", 200, 100, GENERIC_SCOPE, "metadata"),
    ("generic 2000", 2000, 20, GENERIC_SCOPE, "tool_result_matches"),
)
SOURCE_MAP = {
    "lookup_formulary": {"source_name": "formulary-db", "source_type": "database"},
    "check_coverage": {"source_name": "coverage-policy", "source_type": "api"},
}


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def build_trace(
    number: int, spans_per_trace: int = SPANS, scope: str = "strands"
) -> dict[str, Any]:
    """One OTLP JSON trace: a root agent span, then alternating model and tool spans."""
    trace_id = f"{number:032x}"
    base = 1_711_000_000_000_000_000 + number * 10**12
    root = f"{1:016x}"
    request = f"Process pharmacy claim {number} for member MEM-{number:04d}"
    answer = f"Claim {number} approved per Section 4.{number % 9}.1 of the formulary."
    spans = [
        {
            "traceId": trace_id,
            "spanId": root,
            "parentSpanId": "",
            "name": "invoke_agent claims",
            "startTimeUnixNano": str(base),
            "endTimeUnixNano": str(base + spans_per_trace * 10**7),
            "status": {"code": 1},
            "attributes": [
                _attr("gen_ai.operation.name", "invoke_agent"),
                _attr("gen_ai.input.messages", json.dumps([{"role": "user", "content": request}])),
                _attr(
                    "gen_ai.output.messages", json.dumps([{"role": "assistant", "content": answer}])
                ),
            ],
        }
    ]
    for index in range(1, spans_per_trace):
        start = base + index * 10**7
        span: dict[str, Any] = {
            "traceId": trace_id,
            "spanId": f"{index + 1:016x}",
            "parentSpanId": root,
            "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(start + 5 * 10**6),
            "status": {"code": 1},
        }
        if index % 2:
            span["name"] = "chat"
            span["attributes"] = [
                _attr("gen_ai.operation.name", "chat"),
                _attr("gen_ai.request.model", "us.anthropic.claude-sonnet-4"),
                _attr("gen_ai.usage.input_tokens", 400 + index),
                _attr("gen_ai.usage.output_tokens", 80 + index),
                _attr(
                    "gen_ai.output.messages",
                    json.dumps(
                        [{"role": "assistant", "content": f"thinking step {index} " + "x" * 200}]
                    ),
                ),
            ]
        else:
            tool = TOOLS[(index // 2) % len(TOOLS)]
            span["name"] = f"execute_tool {tool}"
            span["attributes"] = [
                _attr("gen_ai.operation.name", "execute_tool"),
                _attr("gen_ai.tool.name", tool),
                _attr("gen_ai.tool.call.id", f"call-{index}"),
                _attr("gen_ai.tool.call.arguments", json.dumps({"member": number, "i": index})),
                _attr(
                    "gen_ai.tool.call.result",
                    json.dumps(
                        {"ok": True, "tier": index % 3, "note": "y" * 200, "coverage_active": True}
                    ),
                ),
            ]
        spans.append(span)
    resource = {"attributes": [_attr("service.name", "claims-agent"), _attr("claim_type", "rx")]}
    return {
        "resourceSpans": [
            {"resource": resource, "scopeSpans": [{"scope": {"name": scope}, "spans": spans}]}
        ]
    }


REFERENCE_TIMER = textwrap.dedent(
    """
    import gc, json, sys, time
    from pathlib import Path
    from agent_validator import validate
    from agent_validator.adapters.otel import OTELAdapter
    from agent_validator.generate import load_contract_from_yaml
    folder = Path(sys.argv[1])
    contract, _ = load_contract_from_yaml(str(folder / "contract.yaml"))
    adapter = OTELAdapter(tool_source_map=json.loads((folder / "sm.json").read_text()))
    texts = [p.read_text() for p in sorted((folder / "traces").glob("*.json"))]
    raws = [json.loads(t) for t in texts]
    gc.collect()
    gc.freeze()
    def run(parse, low, high):
        start = time.perf_counter()
        for text, raw in zip(texts[low:high], raws[low:high]):
            validate(contract, adapter.normalize(json.loads(text) if parse else raw))
        return time.perf_counter() - start
    print("ready", flush=True)
    for line in sys.stdin:  # one chunk per request, so the parent can interleave the sides
        key, low, high = line.split()
        print(run(key == "text", int(low), int(high)), flush=True)
    """
)


class Reference:
    """The reference package in its own venv, timing one round per request."""

    def __init__(self, python: Path, folder: Path) -> None:
        self.process = subprocess.Popen(
            [python, "-c", REFERENCE_TIMER, str(folder)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None and self.process.stdout.readline() == "ready\n"

    def round(self, key: str, low: int, high: int) -> float:
        """Seconds for traces ``low:high`` (``key``: "dict" or "text")."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{key} {low} {high}\n")
        self.process.stdin.flush()
        return float(self.process.stdout.readline())

    def close(self) -> None:
        """Stop the child process."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def canon_timer(folder: Path) -> Any:
    """Canon, in this process: a function timing one round from parsed dicts or from text."""
    from canon.gates.contracts import load_contract, normalize_trace, parse_source_map, validate
    from canon.gates.contracts.otel import normalize_trace_text

    contract = load_contract((folder / "contract.yaml").read_text())
    source_map = parse_source_map(json.loads((folder / "sm.json").read_text()))
    texts = [p.read_text() for p in sorted((folder / "traces").glob("*.json"))]
    raws = [json.loads(text) for text in texts]
    statuses = {validate(contract, normalize_trace(r), source_map=source_map).status for r in raws}
    assert statuses == {"pass"}, statuses  # the benchmark must exercise passing traces
    gc.collect()
    gc.freeze()  # the harness's own inputs: see the module docstring

    def run(key: str, low: int, high: int) -> float:
        start = time.perf_counter()
        for text, raw in zip(texts[low:high], raws[low:high], strict=True):
            # from text as the CLI reads a file: typed structs with msgspec, else dicts
            if key == "text":
                execution = normalize_trace_text(text, source="bench")
            else:
                execution = normalize_trace(raw)
            validate(contract, execution, source_map=source_map)
        return time.perf_counter() - start

    return run


def time_in_process(
    folder: Path, rounds: int, reference_python: Path | None, chunk: int
) -> tuple[dict[str, list[float]], dict[str, list[float]] | None]:
    """Seconds per trace of each side, chunk by chunk, the two sides taking turns.

    Each round walks every trace in chunks of ``chunk``; each chunk is timed on both
    sides, one right after the other, and which side goes first alternates. The speed
    of a shared virtual machine drifts by a third within a second; timing short chunks
    in pairs lets each pair see the same speed.
    """
    canon_round = canon_timer(folder)
    reference = Reference(reference_python, folder) if reference_python else None
    traces = len(list((folder / "traces").glob("*.json")))
    spans = [(low, min(low + chunk, traces)) for low in range(0, traces, chunk)]
    canon: dict[str, list[float]] = {"dict": [], "text": []}
    other: dict[str, list[float]] = {"dict": [], "text": []}
    try:
        for key in ("dict", "text"):
            for _ in range(3):  # warm-up rounds, not counted: both sides start slower
                canon_round(key, 0, traces)
                if reference is not None:
                    reference.round(key, 0, traces)
            turn = 0
            for _ in range(rounds):
                for low, high in spans:
                    turn += 1
                    if reference is not None and turn % 2:
                        other[key].append(reference.round(key, low, high) / (high - low))
                    canon[key].append(canon_round(key, low, high) / (high - low))
                    if reference is not None and not turn % 2:
                        other[key].append(reference.round(key, low, high) / (high - low))
    finally:
        if reference is not None:
            reference.close()
    return canon, (other if reference is not None else None)


def time_command(command: list[str], rounds: int, cwd: Path) -> list[float]:
    """Wall time of a whole process, ``rounds`` times."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run(command, cwd=cwd, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return times


def _rate(per_trace: list[float]) -> str:
    median, best = statistics.median(per_trace), min(per_trace)
    return (
        f"median {1 / median:6.0f} traces/s ({median * 1000:.2f} ms), "
        f"best {1 / best:6.0f} ({best * 1000:.2f} ms)"
    )


def write_workload(folder: Path, spans: int, traces: int, scope: str, when: str) -> None:
    """The traces, contract and source map of one workload, in ``folder``."""
    (folder / "traces").mkdir(parents=True)
    for number in range(traces):
        trace = build_trace(number, spans, scope)
        (folder / "traces" / f"t{number:03d}.json").write_text(json.dumps(trace))
    (folder / "contract.yaml").write_text(CONTRACT.replace("WHEN", WHEN_KINDS[when]))
    (folder / "sm.json").write_text(json.dumps(SOURCE_MAP))


def workload_table(
    scratch: Path, rounds: int, reference_python: Path | None, only: str, chunk: int
) -> None:
    """Every workload, both sides, paired rounds; one table row per workload and input."""
    rows = []
    for name, spans, traces, scope, when in WORKLOADS:
        if only and only != name:
            continue
        folder = scratch / name.replace(" ", "_")
        write_workload(folder, spans, traces, scope, when)
        # the same spans per timed pair: 2,000-span traces are timed one or two at a time
        size = max(1, chunk * SPANS // spans)
        canon, reference = time_in_process(folder, rounds, reference_python, size)
        for key in ("dict", "text"):
            own = statistics.median(canon[key]) * 1000
            if reference is None:
                rows.append((name, key, own, None, None))
                continue
            ref = statistics.median(reference[key]) * 1000
            paired = statistics.median(
                r / c for r, c in zip(reference[key], canon[key], strict=True)
            )
            rows.append((name, key, own, ref, paired))
    print(
        f"{'workload':<22} {'input':<5} {'canon ms/trace':>15} {'ref ms/trace':>13} {'paired':>7}"
    )
    for name, key, own, ref, paired in rows:
        ref_text = "-" if ref is None else f"{ref:13.2f}"
        paired_text = "-" if paired is None else f"{paired:6.1f}x"
        print(f"{name:<22} {key:<5} {own:15.2f} {ref_text:>13} {paired_text:>7}")


def main() -> None:
    """Build the data, time both implementations, print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--abc-venv", type=Path, default=Path("/tmp/abc-venv"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--chunk", type=int, default=10, help="200-span traces per timed pair (default 10)."
    )
    parser.add_argument(
        "--cpu",
        type=int,
        default=None,
        help="The CPU both sides run on (default: the first this process may use; -1: any).",
    )
    parser.add_argument("--only", default="", help="Time one workload of the table only.")
    parser.add_argument("--table-only", action="store_true", help="Skip the detail and CLI.")
    parser.add_argument(
        "--json-parser",
        choices=("auto", "json"),
        default="auto",
        help="auto: msgspec when importable; json: block msgspec (the fallback road).",
    )
    args = parser.parse_args()
    if args.json_parser == "json":
        sys.modules["msgspec"] = None  # type: ignore[assignment]  # import msgspec fails now
    from canon.gates.contracts.otel.jsontext import json_parser

    print(f"Canon's trace JSON parser: {json_parser()}")
    if args.cpu != -1 and hasattr(os, "sched_setaffinity"):
        # one CPU for both sides (the reference's process inherits it): on a shared
        # virtual machine one core can run slower than the other for seconds at a time
        cpu = min(os.sched_getaffinity(0)) if args.cpu is None else args.cpu
        os.sched_setaffinity(0, {cpu})
        print(f"both sides pinned to CPU {cpu}")
    python = args.abc_venv / "bin" / "python"
    reference_python = python if python.exists() else None
    with tempfile.TemporaryDirectory(prefix="bench-contracts-") as scratch:
        workload_table(Path(scratch), args.rounds, reference_python, args.only, args.chunk)
        if args.table_only:
            return
        folder = Path(scratch) / "detail"
        write_workload(folder, SPANS, TRACES, "strands", "input_matches")
        sizes = sorted(p.stat().st_size for p in (folder / "traces").iterdir())
        print(f"{TRACES} traces x {SPANS} spans, median {sizes[len(sizes) // 2] / 1024:.0f} KB")
        canon, reference = time_in_process(folder, args.rounds, reference_python, args.chunk)
        for key, label in (("dict", "normalize + validate"), ("text", "incl. JSON parsing")):
            print(f"in-process, {label}, per chunk of {args.chunk} traces:")
            print(f"  canon     {_rate(canon[key])}")
            if reference is not None:
                print(f"  reference {_rate(reference[key])}")
                median = statistics.median(reference[key]) / statistics.median(canon[key])
                best = min(reference[key]) / min(canon[key])
                # each canon round next to the reference round run right after it: the
                # machine's slow and fast spells hit both sides of a pair alike
                paired = statistics.median(
                    ref / own for ref, own in zip(reference[key], canon[key], strict=True)
                )
                print(
                    f"  canon speed-up: {median:.1f}x on medians, {best:.1f}x on bests, "
                    f"{paired:.1f}x median of paired chunks"
                )

        # the CLI in a child process, msgspec blocked there too when it is here
        block = "import sys; sys.modules['msgspec'] = None; " if args.json_parser == "json" else ""
        launch = f"{block}import runpy; runpy.run_module('canon.cli', run_name='__main__')"
        cli = [
            sys.executable,
            "-c",
            launch,
            "contract",
            "run",
            "--contract",
            "contract.yaml",
            "--traces",
            "traces/*.json",
            "--source-map",
            "sm.json",
        ]
        times = time_command(cli, args.rounds, folder)
        line = f"CLI, one call over {TRACES} files: canon median {statistics.median(times):.2f} s"
        line += f" (best {min(times):.2f} s)"
        agent_validate = args.abc_venv / "bin" / "agent-validate"
        if agent_validate.exists():
            ref_cli = [
                str(agent_validate),
                "run",
                "--contract",
                "contract.yaml",
                "--traces",
                "traces/*.json",
                "--source-map",
                "sm.json",
                "-q",
            ]
            ref_times = time_command(ref_cli, args.rounds, folder)
            line += f" | reference median {statistics.median(ref_times):.2f} s"
        print(line)
        check = subprocess.run([*cli, "--json"], cwd=folder, capture_output=True, text=True)
        summary = json.loads(check.stdout)["summary"]
        print(
            f"CLI summary: {summary['passed']} passed, {summary['failed']} failed, "
            f"{summary['errors']} errors (exit {check.returncode})"
        )


if __name__ == "__main__":
    main()
