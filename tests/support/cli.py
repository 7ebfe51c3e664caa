"""Running `canon` from a test: in this process with click's CliRunner, or as a real process."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from click.testing import CliRunner, Result

from canon.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def copy_example(root: Path) -> Path:
    """Copy the bundled example project to ``root/project`` and return that folder."""
    target = root / "project"
    shutil.copytree(EXAMPLES, target)
    return target


def invoke_here(*args: str) -> Result:
    """Run `canon ARGS` in this process from the current working directory."""
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def invoke_in(project: Path, *args: str) -> Result:
    """Run `canon ARGS` in this process from inside ``project``, as a user there would."""
    cwd = os.getcwd()
    # the working directory, not an option, is how a user points canon at a project
    os.chdir(project)
    try:
        return invoke_here(*args)
    finally:
        os.chdir(cwd)


def invoke_quietly(project: Path, *args: str) -> Result:
    """`invoke_in` with ``--quiet`` after the arguments (no progress lines on stderr)."""
    return invoke_in(project, *args, "--quiet")


def run_canon(
    project: Path, *args: str, env: Mapping[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run `python -m canon ARGS` as a real process in ``project``; never raises on its exit."""
    return subprocess.run(
        [sys.executable, "-m", "canon", *args],
        cwd=project,
        env=None if env is None else dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def one_error_line(result: Result) -> str:
    """The single `canon: error:` line a failed command must print to stderr."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("canon: error: "), result.stderr
    return lines[0]


def advised_pytest(init_stdout: str) -> list[str]:
    """The pytest command `canon init`'s closing advice names, as arguments to run."""
    lines = init_stdout.splitlines()
    (index,) = [i for i, line in enumerate(lines) if "tests/test_coherence.py asserts" in line]
    described = lines[index].strip()
    if described.startswith("tests/"):  # a long command stands on the line before
        return shlex.split(lines[index - 1])
    return shlex.split(described.split("tests/test_coherence.py")[0])
