"""The GitHub Actions recipe in examples/ci/: valid YAML whose commands do what it says."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from support.network import closed_port

REPO = Path(__file__).resolve().parent.parent
WORKFLOW = REPO / "examples" / "ci" / "canon.yml"


@pytest.fixture(scope="module")
def workflow() -> dict[Any, Any]:
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _job(workflow: dict[Any, Any]) -> dict[str, Any]:
    (job,) = workflow["jobs"].values()
    return job  # type: ignore[no-any-return]


def _step(workflow: dict[Any, Any], *, uses: str = "", name: str = "") -> dict[str, Any]:
    steps = _job(workflow)["steps"]
    found = [
        s
        for s in steps
        if (uses and str(s.get("uses", "")).startswith(uses)) or (name and s.get("name") == name)
    ]
    assert len(found) == 1, (uses, name)
    return found[0]  # type: ignore[no-any-return]


def test_the_workflow_runs_on_pull_requests_and_installs_canon_testing(workflow):
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert "pull_request" in triggers
    job = _job(workflow)
    assert "canon-testing" in job["env"]["CANON_SPEC"]
    assert _step(workflow, name="Install Canon")["run"] == 'python -m pip install "$CANON_SPEC"'
    assert _step(workflow, uses="actions/checkout")["uses"].startswith("actions/checkout@v")


def test_the_workflow_caches_the_judge_answers_and_always_uploads_the_reports(workflow):
    cache = _step(workflow, uses="actions/cache@")
    assert cache["with"]["path"] == ".canon/"
    assert cache["with"]["restore-keys"]
    upload = _step(workflow, uses="actions/upload-artifact@")
    assert upload["if"] == "always()"  # a failing check is when the reports matter most
    assert upload["with"]["path"] == "reports/"
    command = _step(workflow, name="canon check")["run"]
    assert "--junit-xml reports/canon.xml --html reports/canon.html" in command
    assert "--format github" in command


# --- the check step's own shell, run as GitHub runs it, in a project made by `canon init`


def _bin_dir(tmp_path: Path, *, fail_first: int = 0) -> Path:
    """A PATH entry whose `canon` logs each call, exits 3 the first `fail_first` times, and
    otherwise runs the real command."""
    directory = tmp_path / "bin"
    directory.mkdir()
    shim = directory / "canon"
    shim.write_text(
        f"#!{shutil.which('bash')}\n"
        'echo "$*" >> "$CANON_CALLS"\n'
        f'if [ "$(wc -l < "$CANON_CALLS")" -le {fail_first} ]; then exit 3; fi\n'
        f'exec "{sys.executable}" -m canon "$@"\n'
    )
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    return directory


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    for args in (("init",), ("accept", "--quiet")):
        done = subprocess.run(
            [sys.executable, "-m", "canon", *args],
            cwd=project,
            capture_output=True,
            text=True,
            check=False,
            env=_env(tmp_path, Path("/nonexistent")),
        )
        assert done.returncode == 0, done.stderr
    return project


def _env(tmp_path: Path, bin_dir: Path, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "CANON_CALLS": str(tmp_path / "calls.log"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "CANON_ATTEMPTS": "3",
        "CANON_RETRY_DELAY": "0",
    }
    env.update(extra)
    return env


def _run_step(workflow, project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    script = _step(workflow, name="canon check")["run"]
    # GitHub's default shell for `run:` on Linux
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )


def _calls(tmp_path: Path) -> int:
    log = tmp_path / "calls.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


@pytest.mark.slow
def test_the_check_step_passes_on_a_fresh_project_and_writes_both_reports(workflow, tmp_path):
    project = _project(tmp_path)
    done = _run_step(workflow, project, _env(tmp_path, _bin_dir(tmp_path)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert _calls(tmp_path) == 1
    assert "::error" not in done.stdout
    assert ET.parse(project / "reports" / "canon.xml").getroot().get("failures") == "0"
    assert (project / "reports" / "canon.html").read_text().count("CONFORMS") >= 1
    assert "### Canon: suite `suite`: CONFORMS" in (tmp_path / "summary.md").read_text()


@pytest.mark.slow
def test_a_regression_fails_the_step_at_once_with_annotations(workflow, tmp_path):
    project = _project(tmp_path)
    script = project / "judge-script.yaml"
    script.write_text('P2: "no"\n' + script.read_text())
    # the agent's replies changed too: an identical text cannot regress on the judge alone
    suite = script.parent / "suite.yaml"
    suite.write_text(suite.read_text().replace("text: >-\n      ", "text: >-\n      Hello. "))
    done = _run_step(workflow, project, _env(tmp_path, _bin_dir(tmp_path)))
    assert done.returncode == 1, done.stdout + done.stderr
    assert _calls(tmp_path) == 1  # a regression is never retried
    errors = [line for line in done.stdout.splitlines() if line.startswith("::error ")]
    regressions = [line for line in errors if "title=Canon regression in " in line]
    assert len(regressions) == 3 and all(",file=suite.yaml::P2 (" in line for line in regressions)
    summary = (tmp_path / "summary.md").read_text()
    assert "REGRESSION" in summary and summary.count("| P2: ") == 3
    assert (project / "reports" / "canon.xml").is_file()


@pytest.mark.slow
def test_the_step_retries_only_an_unavailable_judge(workflow, tmp_path):
    project = _project(tmp_path)
    done = _run_step(workflow, project, _env(tmp_path, _bin_dir(tmp_path, fail_first=2)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert _calls(tmp_path) == 3
    assert done.stdout.count("the judge was unavailable (exit 3); retry") == 2


@pytest.mark.slow
def test_a_judge_that_stays_down_ends_the_step_with_3_after_every_attempt(workflow, tmp_path):
    project = _project(tmp_path)
    config = project / "canon.yaml"
    config.write_text(
        config.read_text().replace("mock:judge-script.yaml", "openai:gpt-4o-mini")
        + "judge_options: {max_attempts: 1, timeout: 5}\nconcurrency: 2\n"
    )
    # The baseline as that judge would have recorded it: a check refuses a changed judge.
    baseline = project / "baselines" / "suite.json"
    recorded = json.loads(baseline.read_text())
    baseline.write_text(json.dumps({**recorded, "judge": "openai/gpt-4o-mini"}))
    env = _env(
        tmp_path,
        _bin_dir(tmp_path),
        CANON_ATTEMPTS="2",
        OPENAI_API_KEY="sk-test",
        OPENAI_BASE_URL=f"http://127.0.0.1:{closed_port()}/v1",
    )
    done = _run_step(workflow, project, env)
    assert done.returncode == 3, done.stdout + done.stderr
    assert _calls(tmp_path) == 2
    assert "::warning title=Canon judge unavailable::" in done.stdout
    assert (project / "reports" / "canon.xml").is_file()
