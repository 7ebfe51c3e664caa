"""A contract written in Python, as the reference allows, is refused by name, not as YAML."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from canon.cli.contract import contract
from canon.gates.contracts.errors import ContractError
from canon.gates.contracts.loader import looks_like_python
from canon.project.contract_files import load_contract_file

ABC = Path(__file__).resolve().parents[2] / "corpus" / "traces" / "abc-examples"
MESSAGE = "Python contract files are not read; write the contract as YAML (see docs/contracts.md)"

# What a migrating user's file looks like: imports, a module-level Contract(...) call.
PYTHON_CONTRACT = """\
from my_validator.contracts.base import Contract
from my_validator.contracts.constraints import must_include_steps

billing = Contract(
    name="billing-v1",
    version="1.0.0",
    constraints=[must_include_steps(["lookup_invoice"])],
)
"""
# Python that happens to parse as a YAML string: only the text gives it away.
PYTHON_AS_ONE_YAML_STRING = "import agent_validator\n"


@pytest.mark.parametrize("suffix", [".py", ".PY", ".pyw"])
def test_a_python_suffix_is_refused_before_it_is_read_as_yaml(tmp_path, suffix):
    path = tmp_path / f"billing{suffix}"
    path.write_text(PYTHON_CONTRACT)
    with pytest.raises(ContractError) as caught:
        load_contract_file(str(path))
    assert str(caught.value) == f"{path}: {MESSAGE}"


@pytest.mark.parametrize("text", [PYTHON_CONTRACT, PYTHON_AS_ONE_YAML_STRING])
def test_python_text_under_a_yaml_name_is_named_as_python(tmp_path, text):
    path = tmp_path / "billing.yaml"
    path.write_text(text)
    with pytest.raises(ContractError) as caught:
        load_contract_file(str(path))
    assert str(caught.value) == f"{path}: {MESSAGE}"
    assert "not valid YAML" not in str(caught.value)


def test_broken_yaml_that_is_not_python_still_says_not_valid_yaml(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: [unclosed\n")
    with pytest.raises(ContractError, match="not valid YAML"):
        load_contract_file(str(path))


def test_a_yaml_contract_that_mentions_python_words_still_loads(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text(
        "name: ok\n"
        "description: 'from x import y; c = Contract(...) in the old package'\n"
        "constraints:\n  - type: must_include_steps\n    steps: [lookup]\n"
    )
    assert load_contract_file(str(path)).name == "ok"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("from a.b import c\n", True),
        ("import yaml\n", True),
        ("def check(execution):\n    return True\n", True),
        ("class Mine(Contract):\n    pass\n", True),
        ("#!/usr/bin/env python3\n", True),
        ("CONTRACT = Contract(\n", True),
        ("c = base.Contract(name='x')\n", True),
        ("name: x\nconstraints: []\n", False),
        ("  from a import b\n", False),  # indented: a YAML block scalar may hold that
        ("important: yes\n", False),
    ],
)
def test_looks_like_python_reads_column_zero_python_lines(text, expected):
    assert looks_like_python(text) is expected


def test_the_cli_refuses_a_python_contract_in_one_line_with_exit_two(tmp_path):
    path = tmp_path / "billing.py"
    path.write_text(PYTHON_CONTRACT)
    result = CliRunner().invoke(
        contract,
        ["run", "--contract", str(path), "--traces", str(ABC / "valid_claim.json")],
        catch_exceptions=False,
    )
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == f"canon: error: {path}: {MESSAGE}\n"


def test_a_real_canon_process_refuses_a_python_contract_with_exit_two(tmp_path):
    path = tmp_path / "billing.yaml"
    path.write_text(PYTHON_CONTRACT)
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "canon",
            "contract",
            "monitor",
            str(tmp_path),
            "--contract",
            str(path),
            "--output-dir",
            str(tmp_path / "out"),
            "--max-polls",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 2
    assert completed.stderr.strip().splitlines() == [f"canon: error: {path}: {MESSAGE}"]
