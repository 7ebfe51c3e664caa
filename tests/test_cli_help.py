from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from canon.cli import _COMMANDS, main

CONTRACT = ("run", "generate", "templates", "monitor")
POLICY = ("validate", "evaluate", "check-order", "generate-synthetic", "explain", "playground")
EVERY_COMMAND = [
    (),
    *((name,) for name in sorted(_COMMANDS)),
    *(("contract", name) for name in CONTRACT),
    *(("policy", name) for name in POLICY),
]


@pytest.mark.parametrize("command", EVERY_COMMAND, ids=lambda c: " ".join(c) or "canon")
def test_dash_h_prints_the_same_help_as_dash_dash_help(command):
    runner = CliRunner()
    short = runner.invoke(main, [*command, "-h"])
    long = runner.invoke(main, [*command, "--help"])
    assert short.exit_code == 0, short.output
    assert short.output == long.output
    assert short.output.startswith("Usage: ")


@pytest.mark.parametrize(
    ("command", "page"),
    [((), "docs/cli.md"), (("score",), "docs/cli.md"), (("check",), "docs/baselines.md")],
)
def test_help_points_at_the_reference_page(command, page):
    result = CliRunner().invoke(main, [*command, "--help"])
    assert page in result.output


@pytest.mark.parametrize("module", ["canon", "canon.cli"])
def test_python_dash_m_runs_the_cli_under_the_name_canon(module):
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    result = subprocess.run(
        [sys.executable, "-m", module, "-h"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Usage: canon [OPTIONS] COMMAND")
    assert "init" in result.stdout and "set-judge" in result.stdout
