"""Time the playground: one Evaluate round trip over loopback HTTP, and the full smoke test.

No target in issue 3; the numbers show the page feels instant and --smoke-test is cheap in CI.
Run: .venv/bin/python benchmarks/bench_playground.py
"""

from __future__ import annotations

import http.client
import json
import statistics
import time

from canon.playground import PlaygroundServer, run_smoke_checks
from canon.playground.examples import EXAMPLE_FAILING_RESPONSE, EXAMPLE_POLICY

ROUND_TRIPS = 300
SMOKE_RUNS = 10


def _evaluate_once(port: int, body: bytes) -> float:
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Host": f"127.0.0.1:{port}", "Content-Type": "application/json"}
    connection.request("POST", "/evaluate", body=body, headers=headers)
    reply = connection.getresponse()
    reply.read()
    connection.close()
    assert reply.status == 200
    return time.perf_counter() - started


def main() -> None:
    body = json.dumps({"policy": EXAMPLE_POLICY, "response": EXAMPLE_FAILING_RESPONSE}).encode()
    with PlaygroundServer(EXAMPLE_POLICY, EXAMPLE_FAILING_RESPONSE) as server:
        trips = [_evaluate_once(server.port, body) for _ in range(ROUND_TRIPS)]
        smokes = []
        for _ in range(SMOKE_RUNS):
            started = time.perf_counter()
            assert run_smoke_checks(server.port, EXAMPLE_POLICY, EXAMPLE_FAILING_RESPONSE).passed
            smokes.append(time.perf_counter() - started)
    print(f"evaluate round trip (5 rules): median {statistics.median(trips) * 1000:.2f} ms")
    print(f"smoke checks (10 checks): median {statistics.median(smokes) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
