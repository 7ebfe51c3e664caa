"""A report piped into a reader that stops early (``canon check | head``) is no crash."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
# A reader that closes the pipe at once: whatever canon prints later meets a closed pipe.
CLOSER = f"{sys.executable} -c 'import sys; sys.stdin.close()'"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    target = tmp_path / "project"
    shutil.copytree(EXAMPLES, target)
    return target


def _piped(project: Path, command: str) -> subprocess.CompletedProcess[str]:
    canon = f"{sys.executable} -m canon.cli {command}"
    return subprocess.run(
        ["bash", "-c", f"set -o pipefail; {canon} | {CLOSER}"],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("output_format", ["text", "json", "github"])
def test_a_closed_pipe_keeps_the_exit_code_and_the_reports(project, output_format):
    assert _piped(project, "accept --quiet").returncode == 0
    done = _piped(
        project,
        f"check --format {output_format} --junit-xml out/r.xml --html out/r.html",
    )
    assert done.returncode == 0, done.stderr
    assert "internal error" not in done.stderr and "BrokenPipe" not in done.stderr
    assert (project / "out" / "r.xml").is_file() and (project / "out" / "r.html").is_file()


def test_a_regression_still_exits_1_through_a_closed_pipe(project):
    assert _piped(project, "accept --quiet").returncode == 0
    script = project / "judge-script.yaml"
    script.write_text('refund above 200: "no"\n' + script.read_text())
    # the replies changed too: an identical text cannot regress on the judge alone
    suite = project / "suite.yaml"
    suite.write_text(suite.read_text().replace("text: >-\n      ", "text: >-\n      Hello. "))
    done = _piped(project, "check --junit-xml out/r.xml")
    assert done.returncode == 1, done.stderr
    assert "internal error" not in done.stderr
    assert "regression" in (project / "out" / "r.xml").read_text()
