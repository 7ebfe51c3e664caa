"""Checking traces from text with the cyclic GC paused for each parse, and without the pause.

Usage: python benchmarks/bench_gc_pause.py [--rounds 14] [--json-parser json]

Builds the generic GenAI traces of ``bench_contracts.py`` (100 of 200 spans, 20 of 2,000)
and checks each from its text as ``bench_contracts.py`` does (parse, normalize, validate
with the ``tool_result_matches`` contract), in rounds that alternate the two ways of
parsing: ``jsontext.loads`` (the collector paused for the parse) and the same parser
called without the pause. Prints the median time per trace of each and the median of the
paired ratios (each round without the pause over the round with it right after).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable

from bench_contracts import CONTRACT, GENERIC_SCOPE, SOURCE_MAP, WHEN_KINDS, build_trace


def main() -> None:
    """Time both ways, per trace size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=14)
    parser.add_argument("--json-parser", choices=("auto", "json"), default="auto")
    args = parser.parse_args()
    if args.json_parser == "json":
        sys.modules["msgspec"] = None  # type: ignore[assignment]  # import msgspec fails now
    from canon.gates.contracts import load_contract, normalize_trace, parse_source_map, validate
    from canon.gates.contracts.otel import jsontext, normalize, parse_trace_text

    print(f"Canon's trace JSON parser: {jsontext.json_parser()}")
    contract = load_contract(CONTRACT.replace("WHEN", WHEN_KINDS["tool_result_matches"]))
    source_map = parse_source_map(SOURCE_MAP)
    for spans, traces in ((200, 100), (2000, 20)):
        texts = [json.dumps(build_trace(number, spans, GENERIC_SCOPE)) for number in range(traces)]
        gc.collect()
        gc.freeze()  # the texts are no garbage: see bench_contracts.py

        def run(texts: list[str] = texts) -> float:
            start = time.perf_counter()
            for text in texts:
                trace = parse_trace_text(text, source="bench")
                validate(contract, normalize_trace(trace), source_map=source_map)
            return (time.perf_counter() - start) / len(texts) * 1000

        ways: dict[str, Callable[[str], object]] = {
            "unpaused": jsontext._parse,
            "paused": jsontext.loads,
        }
        times: dict[str, list[float]] = {way: [] for way in ways}
        for round_number in range(args.rounds + 2):
            for way, parse in ways.items():
                normalize.loads = parse  # the name parse_trace_text calls
                elapsed = run()
                if round_number >= 2:  # two warm-up rounds
                    times[way].append(elapsed)
        normalize.loads = jsontext.loads
        paired = statistics.median(
            a / b for a, b in zip(times["unpaused"], times["paused"], strict=True)
        )
        medians = ", ".join(f"{way} {statistics.median(t):.2f} ms" for way, t in times.items())
        print(f"{spans:>5} spans: {medians}; unpaused/paused paired median {paired:.2f}x")
        gc.unfreeze()


if __name__ == "__main__":
    main()
