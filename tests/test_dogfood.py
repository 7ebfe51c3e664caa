"""The repository checks its own bundled example against its own accepted baseline."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from canon.check.pipeline import baseline_from_run, score_run
from canon.cli.run import build_plan
from canon.core.baseline import baseline_to_data
from canon.judge.sync import run_sync
from canon.project.config import load_config
from canon.project.store import dump_json
from canon.project.suite import read_suite

REPO = Path(__file__).resolve().parent.parent


def test_the_committed_baseline_is_what_accepting_the_example_writes_byte_for_byte():
    config = load_config(cwd=REPO)
    assert config.suite is not None and config.baselines_dir is not None
    plan = build_plan(config)
    # what "canon accept" records: two looks at every answer, then confirmation
    baseline = baseline_from_run(
        plan, run_sync(score_run(plan, read_suite(config.suite), record=True))
    )
    committed = (config.baselines_dir / "suite.json").read_text(encoding="utf-8")
    assert dump_json(baseline_to_data(baseline)) == committed, (
        'the example changed without re-accepting: run "canon accept" at the repository root'
    )


def test_canon_check_at_the_repository_root_conforms():
    completed = subprocess.run(
        [sys.executable, "-m", "canon.cli", "check", "--quiet"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "CONFORMS" in completed.stdout
