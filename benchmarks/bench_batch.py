"""Batch mode over 10,000 questions against the local files + batches server.

A real ``canon score --batch`` process submits 1,000 artifacts x 10 questions as one batch,
is killed (SIGKILL) while it waits, and a second invocation resumes the same batch, fills the
answer cache and scores. Prints the time of each phase, how many batches and uploads the
server saw (1 and 1: nothing paid twice), online calls (0), and the run's cost at the batch
price next to what the same tokens cost online.
Run: .venv/bin/python benchmarks/bench_batch.py [artifacts]
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
QUESTIONS = 10  # the example constitution's questions per artifact
INPUT, OUTPUT = 0.15e-6, 0.60e-6  # gpt-4o-mini online, USD per token (litellm's table)


def _batch_server() -> Any:
    path = ROOT / "tests" / "judge" / "batch_server.py"
    spec = importlib.util.spec_from_file_location("bench_batch_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _project(directory: Path) -> Path:
    project = directory / "project"
    shutil.copytree(ROOT / "examples", project)
    (project / "canon.yaml").write_text(
        "judge_model: openai:gpt-4o-mini\nconstitution_path: constitution.yaml\n"
        "suite: big.yaml\njudge_options:\n  batch: true\n"
    )
    lines = ["artifacts:"]
    for index in range(ARTIFACTS):
        lines.append(f"  - id: reply-{index}")
        lines.append(f"    text: Reply {index}, I refunded the duplicate charge under Section 4.2.")
    (project / "big.yaml").write_text("\n".join(lines) + "\n")
    return project


def main() -> None:
    """Run the two invocations and print the numbers."""
    server_module = _batch_server()
    with (
        tempfile.TemporaryDirectory() as tmp,
        server_module.running_batch_server(polls_to_finish=10**9) as server,
    ):
        project = _project(Path(tmp))
        env = {
            **os.environ,
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-bench",
            "CANON_BATCH_POLL_SECONDS": "0.2",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        command = [sys.executable, "-m", "canon.cli", "score", "--format", "json"]
        started = time.monotonic()
        dry = subprocess.run([*command, "--estimate"], cwd=project, env=env, capture_output=True)
        estimate = json.loads(dry.stdout)["estimate"]
        print(
            f"--estimate: {estimate['calls']} calls, {estimate['prompt_tokens']} prompt tokens, "
            f"${estimate['cost_usd']:.4f} at the batch price, in {time.monotonic() - started:.1f} s"
            f" ({len(server.chat_requests)} online calls, {len(server.batches)} batches)"
        )
        started = time.monotonic()
        first = subprocess.Popen(
            command, cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        while server.polls < 3 and first.poll() is None:
            time.sleep(0.05)
        submitted = time.monotonic() - started
        if first.poll() is not None:
            raise SystemExit(f"the first run ended on its own with exit {first.returncode}")
        first.kill()
        first.wait()
        print(
            f"first run: submitted {ARTIFACTS * QUESTIONS} questions and was killed while "
            f"waiting after {submitted:.1f} s (exit {first.returncode})"
        )
        server.polls_to_finish = 1
        started = time.monotonic()
        second = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)
        resumed = time.monotonic() - started
        if second.returncode != 0:
            print(second.stderr[-2000:])
            raise SystemExit(f"the resumed run failed with exit {second.returncode}")
        usage = json.loads(second.stdout)["usage"]
        online = usage["prompt_tokens"] * INPUT + usage["completion_tokens"] * OUTPUT
        print(
            f"second run: resumed and scored in {resumed:.1f} s; server saw "
            f"{len(server.batches)} batch(es), {server.uploads} upload(s), "
            f"{len(server.chat_requests)} online call(s)"
        )
        print(
            f"usage: {usage['calls']} calls ({usage['batch_calls']} batch), "
            f"{usage['prompt_tokens']} prompt + {usage['completion_tokens']} completion tokens, "
            f"cost ${usage['cost_usd']:.4f} at the batch price (online: ${online:.4f})"
        )
        batch_lines = [x for x in second.stderr.splitlines() if x.startswith("batch")]
        print("batch lines on stderr of the resumed run:", *batch_lines, sep="\n  ")


if __name__ == "__main__":
    main()
