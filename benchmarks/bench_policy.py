"""Policy gate benchmarks: in-process evaluation rate, check-order on 7 rules, CLI start-up.

Run: .venv/bin/python benchmarks/bench_policy.py
Targets (issue 3): >= 20,000 evaluations/s for a 50-rule policy validated once; check-order on
7 rules < 1 s; ``canon policy evaluate`` from process start < 150 ms.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from canon.gates.policy import check_order_conformance, evaluate_response, validate_policy

KINDS = ("required_field", "equals", "one_of", "false", "empty_list")
ROOT = Path(__file__).resolve().parent.parent


def fifty_rules(layout: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """10 rules per kind on 3-level paths, and a nested response that passes all of them.

    ``grouped``: report.<kind>.field<i> (one object per kind, like a structured reply).
    ``scattered``: section<i>.<kind>.field (every rule under its own chain of objects).
    """
    rules: list[dict[str, Any]] = []
    response: dict[str, Any] = {}
    samples = {"required_field": "text", "equals": "approve", "one_of": 3, "false": False}
    for index in range(10):
        for kind in KINDS:
            if layout == "grouped":
                parts = ["report", kind, f"field{index}"]
            else:
                parts = [f"section{index}", kind, "field"]
            rule: dict[str, Any] = {"rule_id": f"{kind}-{index}", "kind": kind}
            rule["path"] = ".".join(parts)
            if kind == "equals":
                rule["value"] = "approve"
            if kind == "one_of":
                rule["values"] = ["low", "high", 3]
            rules.append(rule)
            node = response
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = [] if kind == "empty_list" else samples[kind]
    policy = {"schema_version": "1.0", "policy_id": "bench-50", "rules": rules}
    return policy, response


def evaluation_rate(layout: str, rounds: int = 7, per_round: int = 5000) -> float:
    source, response = fifty_rules(layout)
    policy = validate_policy(source)
    assert evaluate_response(policy, response).passed
    rates = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(per_round):
            evaluate_response(policy, response)
        rates.append(per_round / (time.perf_counter() - start))
    return statistics.median(rates)


def check_order_seconds(rounds: int = 5) -> float:
    source, response = fifty_rules("grouped")
    seven = {**source, "rules": source["rules"][:7]}
    policy = validate_policy(seven)
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        report = check_order_conformance(policy, response)
        times.append(time.perf_counter() - start)
    assert report.to_json()["coverage"]["evaluator_runs"] == 15_120
    return statistics.median(times)


def cli_milliseconds(runs: int = 15) -> float:
    source, response = fifty_rules("grouped")
    canon = ROOT / ".venv" / "bin" / "canon"
    with tempfile.TemporaryDirectory() as folder:
        policy_file = Path(folder) / "policy.json"
        response_file = Path(folder) / "response.json"
        policy_file.write_text(json.dumps(source), encoding="utf-8")
        response_file.write_text(json.dumps(response), encoding="utf-8")
        command = [str(canon), "policy", "evaluate", str(policy_file), str(response_file)]
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            done = subprocess.run(command, capture_output=True, check=False)
            times.append((time.perf_counter() - start) * 1000)
            assert done.returncode == 0, done.stderr
    return statistics.median(times)


def main() -> None:
    grouped = evaluation_rate("grouped")
    scattered = evaluation_rate("scattered")
    print(f"evaluate_response, 50 rules, grouped response:   {grouped:,.0f} evaluations/s (median)")
    print(
        f"evaluate_response, 50 rules, scattered response: {scattered:,.0f} evaluations/s (median)"
    )
    print(f"check-order, 7 rules (15,120 evaluator runs):   {check_order_seconds():.3f} s (median)")
    print(f"canon policy evaluate, process start to exit:   {cli_milliseconds():.0f} ms (median)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
