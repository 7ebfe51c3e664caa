"""Names users bring from the reference package (agentic-behavioral-contracts) answer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from canon.gates.contracts import ContractError, load_contract

ROOT = Path(__file__).resolve().parents[3]


def _canon(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "canon.cli", "contract", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )


def test_list_contracts_answers_as_the_templates_command():
    reference = _canon("list-contracts")
    ours = _canon("templates")
    assert reference.returncode == 0, reference.stderr
    assert reference.stdout == ours.stdout
    assert "claims-processing-v1" in reference.stdout
    assert reference.stderr == "canon contract: 'list-contracts' is 'templates' in Canon\n"


@pytest.mark.parametrize("path", ["contracts/claims.yaml", "my_contract.yml", "./contract.py"])
def test_load_contract_given_a_path_names_the_file_loader(path):
    with pytest.raises(ContractError) as raised:
        load_contract(path)
    message = str(raised.value)
    assert f"not a path ({path!r})" in message
    assert "canon.project.contract_files.load_contract_file(path)" in message


def test_load_contract_given_a_path_object_names_the_file_loader(tmp_path):
    with pytest.raises(ContractError, match="load_contract_file"):
        load_contract(tmp_path / "contract.yaml")  # type: ignore[arg-type]


def test_text_that_is_no_path_keeps_the_mapping_message():
    with pytest.raises(ContractError, match="a contract is a mapping with a constraints list"):
        load_contract("just words")
