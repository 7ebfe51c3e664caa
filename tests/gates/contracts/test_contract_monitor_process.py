"""`canon contract monitor` as a real process: it picks up arrivals and stops on Ctrl-C."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ABC = Path(__file__).resolve().parents[2] / "corpus" / "traces" / "abc-examples"


def _wait_for(predicate, seconds: float = 20.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_monitor_process_validates_an_arrival_and_stops_cleanly_on_sigint(tmp_path):
    watch, out = tmp_path / "in", tmp_path / "out"
    watch.mkdir()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "canon.cli",
            "contract",
            "monitor",
            str(watch),
            "--contract",
            "claims-processing-v1",
            "--output-dir",
            str(out),
            "--poll-interval",
            "0.1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(0.5)  # let it start watching before the trace arrives
        shutil.copy(ABC / "invalid_claim.json", watch / "arrival.json")
        # Records appear under their final name only when complete (temp file + link).
        assert _wait_for(lambda: any(out.glob("*.json"))), "no audit record appeared"
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert "validated 1 trace(s)" in stdout
    # no temporary file is left behind: the record, and the journal of alerts sent
    assert sorted(p.name for p in out.iterdir()) == [
        ".canon-monitor-alerts.jsonl",
        "fail_arrival.json",
    ]
    assert json.loads((out / "fail_arrival.json").read_text())["verdict"]["status"] == "fail"
    assert stdout.count(f"FAIL  {watch / 'arrival.json'}") == 1
