"""Where the contract gate's time goes per trace, stage by stage, on the benchmark workloads.

Usage: python benchmarks/profile_contracts.py [--only NAME] [--repeat 7]

Builds the workloads of ``bench_contracts.py`` and times each stage of checking one trace
on its own: parsing the text (json, and msgspec when installed), collecting the spans,
reading the span columns, ordering and the root, the request and answer, validation, and
the whole road from parsed JSON and from text. Times are CPU time of this process (the
best of ``--repeat`` rounds over every trace), so other jobs on a shared machine disturb
them less than wall time; they are for finding the next thing to cut, not for comparing
with the reference (``bench_contracts.py`` does that, in paired wall-clock rounds).
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from bench_contracts import CONTRACT, SOURCE_MAP, WHEN_KINDS, WORKLOADS, build_trace


def _best(label: str, step: Callable[[Any], object], items: list[Any], repeat: int) -> None:
    """Print the best per-item CPU time of ``step`` over ``items``."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for item in items:
            step(item)
        best = min(best, time.process_time() - start)
    print(f"  {label:<34} {best / len(items) * 1e6:9.1f} us/trace")


def profile(name: str, spans: int, traces: int, scope: str, when: str, repeat: int) -> None:
    """Time every stage of one workload."""
    from canon.gates.contracts import load_contract, normalize_trace, parse_source_map, validate
    from canon.gates.contracts.otel import normalize, normalize_trace_text, parse_trace_text
    from canon.gates.contracts.otel.jsontext import _fast_decoder, json_parser
    from canon.gates.contracts.otel.runs import run_groups
    from canon.gates.contracts.otel.sources import SpanSources
    from canon.gates.contracts.otel.spans import collect_spans
    from canon.gates.contracts.otel.text import answer_text, request_text
    from canon.gates.contracts.otel.tree import repeated_tool_calls, top_positions

    contract = load_contract(CONTRACT.replace("WHEN", WHEN_KINDS[when]))
    source_map = parse_source_map(SOURCE_MAP)
    texts = [json.dumps(build_trace(number, spans, scope)) for number in range(traces)]
    raws = [json.loads(text) for text in texts]
    batches = [collect_spans(raw, source="bench") for raw in raws]
    tables = [normalize._table(batch.entries) for batch in batches]
    executions = [normalize_trace(raw) for raw in raws]
    gc.collect()
    gc.freeze()  # the inputs held here are no garbage: see bench_contracts.py
    print(f"{name} ({traces} traces x {spans} spans; text parsed by {json_parser()})")
    _best("json.loads", json.loads, texts, repeat)
    fast = _fast_decoder()
    if fast is not None:
        _best("msgspec decode", fast, texts, repeat)
    _best("collect spans", partial(collect_spans, source="bench"), raws, repeat)
    _best("tell runs apart", run_groups, batches, repeat)
    _best(
        "span columns (names, kinds, ids)", lambda b: normalize._table(b.entries), batches, repeat
    )

    def tree(table: list[list[Any]]) -> object:
        names, kinds, _, span_ids, parent_ids, _, _ = table
        tops = top_positions(span_ids, parent_ids)
        intervals = partial(normalize._interval, table)
        return repeated_tool_calls(names, kinds, span_ids, parent_ids, intervals, tops)

    _best("top spans and repeated tool calls", tree, tables, repeat)

    def texts_of(batch: Any) -> object:
        root = SpanSources(batch.entries).decoded(0)
        return request_text(root), answer_text(root)

    _best("root span's request and answer", texts_of, batches, repeat)
    _best(
        "normalize (collected spans)",
        partial(normalize._normalize_batch, metadata=None),
        batches,
        repeat,
    )
    _best(
        "validate (normalized)",
        partial(validate, contract, source_map=source_map),
        executions,
        repeat,
    )
    _best(
        "whole, from parsed JSON",
        lambda raw: validate(contract, normalize_trace(raw), source_map=source_map),
        raws,
        repeat,
    )
    _best(
        "whole, from text (dicts)",
        lambda text: validate(
            contract, normalize_trace(parse_trace_text(text)), source_map=source_map
        ),
        texts,
        repeat,
    )
    _best(
        "whole, from text (as the CLI reads)",
        lambda text: validate(contract, normalize_trace_text(text), source_map=source_map),
        texts,
        repeat,
    )
    gc.unfreeze()


def main() -> None:
    """Profile every workload (or one)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="Profile one workload of the table only.")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    for name, spans, traces, scope, when in WORKLOADS:
        if not args.only or args.only == name:
            profile(name, spans, traces, scope, when, args.repeat)


if __name__ == "__main__":
    main()
