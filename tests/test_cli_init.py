from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from click.testing import CliRunner

from canon.cli import main
from canon.cli.init import FILES

from support.cli import advised_pytest

CANON = [sys.executable, "-m", "canon"]


def _run(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run(
        args, cwd=directory, capture_output=True, text=True, timeout=120, env=env, check=False
    )


def _init(directory: Path):
    cwd = os.getcwd()
    os.chdir(directory)
    try:
        return CliRunner().invoke(main, ["init"], catch_exceptions=False)
    finally:
        os.chdir(cwd)


@pytest.mark.slow
def test_init_in_an_empty_directory_then_score_accept_check_and_pytest_pass_offline(tmp_path):
    init = _run(tmp_path, *CANON, "init")
    assert init.returncode == 0, init.stderr
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == sorted(
        [*FILES, "tests", ".gitignore"]
    )
    assert (tmp_path / ".gitignore").read_text() == ".canon/\n"
    assert "canon set-judge --provider" in init.stdout.splitlines()[-2]

    score = _run(tmp_path, *CANON, "score")
    assert score.returncode == 0, score.stdout + score.stderr
    assert "3 canon, 0 non-canon" in score.stdout
    accept = _run(tmp_path, *CANON, "accept", "--quiet")
    assert accept.returncode == 0, accept.stderr
    assert (tmp_path / "baselines" / "suite.json").is_file()
    check = _run(tmp_path, *CANON, "check", "--quiet")
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.rstrip().endswith("CONFORMS to the baseline")
    tests = _run(tmp_path, *advised_pytest(init.stdout), "-q", "-p", "no:cacheprovider")
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "1 passed" in tests.stdout


def _advice_with_path(tmp_path: Path, path: str) -> list[str]:
    project = tmp_path / "project"
    project.mkdir()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PATH": path}
    init = subprocess.run(
        [*CANON, "init"], cwd=project, env=env, capture_output=True, text=True, timeout=120
    )
    assert init.returncode == 0, init.stderr
    return advised_pytest(init.stdout)


def test_init_advises_plain_pytest_when_it_is_this_environments(tmp_path):
    scripts = sysconfig.get_path("scripts")
    assert Path(scripts, "pytest").is_file()  # pytest is a dependency: its script is here
    assert _advice_with_path(tmp_path, f"{scripts}{os.pathsep}{os.defpath}") == ["pytest"]


def test_init_advises_this_interpreters_pytest_when_path_has_another(tmp_path):
    other = tmp_path / "other-bin"
    other.mkdir()
    (other / "pytest").write_text("#!/bin/sh\necho \"fixture 'canon_metric' not found\"\nexit 1\n")
    (other / "pytest").chmod(0o755)
    advice = _advice_with_path(tmp_path, f"{other}{os.pathsep}{os.defpath}")
    assert advice == [sys.executable, "-m", "pytest"]
    tests = _run(tmp_path / "project", *advice, "-q", "-p", "no:cacheprovider")
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "1 passed" in tests.stdout


@pytest.mark.parametrize("command", ["score", "accept", "check", "calibrate"])
def test_a_command_in_an_empty_directory_says_to_run_canon_init(tmp_path, command):
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = CliRunner().invoke(main, [command], catch_exceptions=False)
    finally:
        os.chdir(cwd)
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "canon: error: no canon.yaml (or pyproject.toml with [tool.canon]) in "
        f"{tmp_path.resolve()} or any directory above it"
    )
    assert "run `canon init` to start a project here" in result.stderr


def test_the_scaffolded_script_can_be_edited_into_a_caught_regression(tmp_path):
    assert _init(tmp_path).exit_code == 0
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        runner = CliRunner()
        assert runner.invoke(main, ["accept", "--quiet"]).exit_code == 0
        script = tmp_path / "judge-script.yaml"
        script.write_text('P2: "no"\n' + script.read_text())
        # the agent's replies changed too: an identical text cannot regress on the judge alone
        suite = script.parent / "suite.yaml"
        suite.write_text(suite.read_text().replace("text: >-\n      ", "text: >-\n      Hello. "))
        check = runner.invoke(main, ["check", "--quiet"])
    finally:
        os.chdir(cwd)
    assert check.exit_code == 1, check.output
    assert "REGRESSION" in check.stdout


@pytest.mark.parametrize("existing", [*FILES, "canon.yml"])
def test_init_writes_nothing_when_any_file_it_would_write_exists(tmp_path, existing):
    (tmp_path / existing).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / existing).write_text("mine\n")
    result = _init(tmp_path)
    assert result.exit_code == 2
    assert existing in result.stderr and "nothing was written" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert (tmp_path / existing).read_text() == "mine\n"
    left = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert left == {existing}


def test_init_refuses_a_project_configured_by_tool_canon(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.canon]\njudge_model = "openai:gpt-4o"\n')
    result = _init(tmp_path)
    assert result.exit_code == 2
    assert "[tool.canon]" in result.stderr and "nothing was written" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pyproject.toml"]


def test_init_appends_to_an_existing_gitignore_and_keeps_its_lines(tmp_path):
    (tmp_path / ".gitignore").write_text("*.pyc\nbuild")
    assert _init(tmp_path).exit_code == 0
    assert (tmp_path / ".gitignore").read_text() == "*.pyc\nbuild\n.canon/\n"


def test_init_leaves_a_gitignore_that_already_ignores_the_cache(tmp_path):
    (tmp_path / ".gitignore").write_text(".canon\n")
    result = _init(tmp_path)
    assert result.exit_code == 0
    assert (tmp_path / ".gitignore").read_text() == ".canon\n"
    assert "created .gitignore" not in result.stdout


def test_init_refuses_when_a_file_stands_where_a_directory_must_go(tmp_path):
    (tmp_path / "tests").write_text("not a directory\n")
    result = _init(tmp_path)
    assert result.exit_code == 2
    assert "tests is a file where canon init needs a directory" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tests"]


def test_a_write_that_fails_midway_is_one_error_naming_what_was_written(tmp_path, monkeypatch):
    import canon.cli.init as init_module

    real = init_module.write_new_file

    def fail_on_the_suite(directory, names, data):
        if list(names) == ["suite.yaml"]:
            raise OSError(28, "No space left on device")
        return real(directory, names, data)

    monkeypatch.setattr(init_module, "write_new_file", fail_on_the_suite)
    result = _init(tmp_path)
    assert result.exit_code == 2
    assert result.stderr.strip().endswith(
        "cannot write the starter files: No space left on device "
        "(already written: canon.yaml, constitution.yaml)"
    )


def test_the_scaffolded_suite_gives_each_reply_the_request_it_answers(tmp_path, monkeypatch):
    from canon.project.suite import read_suite

    from support.cli import invoke_in

    assert invoke_in(tmp_path, "init").exit_code == 0
    artifacts = read_suite(tmp_path / "suite.yaml")
    assert artifacts and all(a.input for a in artifacts)
