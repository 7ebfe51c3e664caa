"""What does capturing a test's trace add to a test that calls a local model server?

One "test" is ``--calls`` chat completions through the ``openai`` client, instrumented by
OpenInference's OpenAI instrumentor (the instrumentation is the user's: it is on in both
arms), against the fake OpenAI-compatible server of tests/judge on 127.0.0.1. The capture
arm wraps the calls in ``canon.capture_trace()`` and then reads ``captured.trace`` (the
OTLP conversion and the contract gate's normalizer), as a test handing it to
``assert_coheres`` does. The arms alternate test by test, ``--tests`` each per round, for
``--rounds`` rounds; the added time is the median over rounds of (capture - plain) / plain.
``--latency`` gives the server a per-reply service time (0: as fast as loopback goes, the
worst case for the ratio).

Run: .venv/bin/python benchmarks/bench_capture.py [--calls 5 --tests 40 --rounds 7 --latency 0]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import openai
from bench_judge import _fake_server
from openinference.instrumentation.openai import OpenAIInstrumentor

from canon import capture_trace


def _test(client: openai.OpenAI, calls: int) -> None:
    for turn in range(calls):
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": f"refund question {turn}"}]
        )


def _plain(client: openai.OpenAI, calls: int) -> None:
    _test(client, calls)


def _captured(client: openai.OpenAI, calls: int) -> None:
    with capture_trace() as captured:
        _test(client, calls)
    assert len(captured.trace.steps) == calls


def _round(client: openai.OpenAI, calls: int, tests: int) -> tuple[float, float]:
    """Mean seconds per test of each arm, the arms alternating test by test (so a load
    change on the machine reaches both)."""
    spent = {_plain: 0.0, _captured: 0.0}
    for index in range(2 * tests):
        arm = _plain if index % 2 == 0 else _captured
        start = time.perf_counter()
        arm(client, calls)
        spent[arm] += time.perf_counter() - start
    return spent[_plain] / tests, spent[_captured] / tests


def _empty_block() -> None:
    with capture_trace():
        pass


def _per_call(work: Callable[[], object], times: int) -> float:
    start = time.perf_counter()
    for _ in range(times):
        work()
    return (time.perf_counter() - start) / times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5, help="model calls per test")
    parser.add_argument("--tests", type=int, default=40, help="tests per arm per round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--latency", type=float, default=0.0, help="server seconds per reply")
    args = parser.parse_args()
    OpenAIInstrumentor().instrument()
    with _fake_server().running_fake_llm() as server:
        if args.latency:
            server.limit_slots(64, args.latency)
        client = openai.OpenAI(base_url=server.base_url, api_key="local", max_retries=0)
        _captured(client, args.calls)  # warm: imports, the provider, the connection
        plain_times, captured_times, added = [], [], []
        for _ in range(args.rounds):
            plain, captured = _round(client, args.calls, args.tests)
            plain_times.append(plain)
            captured_times.append(captured)
            added.append((captured - plain) / plain)
        with capture_trace() as one:
            _test(client, args.calls)
        enter_exit = _per_call(_empty_block, 2000)
        reading = _per_call(lambda: one.trace, 500)
    print(
        f"{args.calls} calls per test, latency {args.latency * 1000:.0f} ms, "
        f"{args.tests} tests x {args.rounds} rounds per arm"
    )
    for label, times in (
        ("plain test (instrumented, no capture)", plain_times),
        ("with capture_trace() + .trace", captured_times),
    ):
        print(f"{label:<38} {statistics.median(times) * 1e3:.2f} ms")
    print(
        f"capture's own cost per test: enter/exit {enter_exit * 1e6:.0f} us, "
        f".trace of {args.calls} spans {reading * 1e6:.0f} us"
    )
    print(
        f"added: median {statistics.median(added) * 100:+.1f} % "
        f"(rounds: {', '.join(f'{value * 100:+.1f}' for value in added)})"
    )


if __name__ == "__main__":
    main()
