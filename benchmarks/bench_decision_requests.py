"""Requests a decision judge costs per artifact through the CLI, against ``jevcompat mock``.

A decision judge asks every question of a response in one call; what else a command sends
(re-asks, one question per call) is what this measures. For N artifacts of the example
project judged by ``typesafe:jev-1.13.0`` (answer cache off), it runs ``canon score``,
``accept`` and ``check`` in real processes and prints, per command: the requests the server
received, those that asked every question (one per response is the ideal), the rest, the
input tokens and list-price dollars the command reported, and the wall time.
Run: .venv/bin/python benchmarks/bench_decision_requests.py [N]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from canon.project.store import constitution_from_file, load_rubric

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.jevcompat_server import running_jevcompat  # noqa: E402


def _suite(count: int) -> str:
    lines = ["artifacts:"]
    for index in range(count):
        lines += [
            f"  - id: a{index}",
            f"    input: Why was I charged twice for invoice {1000 + index}?",
            f"    text: I refunded the second charge of {index + 1}.99 EUR on invoice "
            f"{1000 + index}; it reaches your card within five working days.",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    constitution = constitution_from_file(ROOT / "examples" / "constitution.yaml")
    asked = sum(len(q.wordings) + 1 for q in load_rubric().questions_for(constitution))
    with tempfile.TemporaryDirectory() as temp, running_jevcompat() as server:
        project = Path(temp) / "project"
        shutil.copytree(ROOT / "examples", project)
        (project / "bench.yaml").write_text(_suite(count))
        (project / "canon.yaml").write_text(
            "judge_model: typesafe:jev-1.13.0\nconstitution_path: constitution.yaml\n"
            "suite: bench.yaml\nbaselines_dir: baselines\njudge_cache: false\n"
        )
        env = {**os.environ, "TYPESAFE_BASE_URL": server.url, "TYPESAFE_API_KEY": "bench"}
        print(f"{count} artifacts, {asked} questions x wordings per response, jevcompat mock")
        print(
            f"{'command':8} {'exit':>4} {'requests':>8} {'full':>5} {'other':>6} "
            f"{'input tok':>10} {'usd':>9} {'wall s':>7}"
        )
        for command in ("score", "accept", "check"):
            before, full = server.config.requests, len(server.bodies)
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "canon", command, "--quiet"]
                + (["--format", "json"] if command != "accept" else []),
                cwd=project,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            wall = time.perf_counter() - started
            bodies = server.bodies[full:]
            whole = sum(1 for body in bodies if len(body["questions"]) == asked)
            requests = server.config.requests - before
            tokens, cost = "-", "-"
            if command != "accept" and done.stdout.strip():
                usage = json.loads(done.stdout)["usage"]
                tokens, cost = str(usage["prompt_tokens"]), f"{usage['cost_usd']:.5f}"
            print(
                f"{command:8} {done.returncode:>4} {requests:>8} {whole:>5} "
                f"{requests - whole:>6} {tokens:>10} {cost:>9} {wall:>7.2f}"
            )


if __name__ == "__main__":
    main()
