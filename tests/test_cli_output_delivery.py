"""Undeliverable output is never Canon's bug (exit 5): a closed stdout, a bad --output."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from canon.cli import main
from canon.cli.common import CLOSED_STDOUT_MESSAGE

ABC = Path(__file__).resolve().parent / "corpus" / "traces" / "abc-examples"
POLICY = {
    "policy_id": "p",
    "schema_version": "1.0",
    "rules": [{"rule_id": "r", "kind": "required_field", "path": "x"}],
}


@pytest.fixture
def policy_files(tmp_path: Path) -> tuple[str, str]:
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(POLICY))
    response = tmp_path / "response.json"
    response.write_text('{"x": 1}')
    return str(policy), str(response)


def _canon(*args: str) -> list[str]:
    return [sys.executable, "-m", "canon", *args]


def _with_stdout_closed(args: list[str]) -> subprocess.CompletedProcess[str]:
    # bash's >&- closes descriptor 1 itself: DEVNULL would be an open descriptor
    command = " ".join(shlex.quote(part) for part in args) + " >&-"
    return subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, timeout=120, check=False
    )


def _commands(policy: str, response: str) -> list[list[str]]:
    trace = str(ABC / "valid_claim.json")
    return [
        ["policy", "evaluate", policy, response],
        ["policy", "validate", policy],
        ["policy", "generate-synthetic", policy],
        ["contract", "run", "--contract", "claims-processing-v1", "--traces", trace],
        ["contract", "generate", "--traces", trace],
        ["contract", "templates"],
    ]


@pytest.mark.parametrize("index", range(6))
def test_a_real_process_with_stdout_closed_exits_two_with_one_line(policy_files, index):
    args = _commands(*policy_files)[index]
    done = _with_stdout_closed(_canon(*args))
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"canon: error: {CLOSED_STDOUT_MESSAGE}\n"


def test_stdout_open_the_same_commands_still_succeed(policy_files):
    for args in _commands(*policy_files):
        done = subprocess.run(
            _canon(*args), capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, (args, done.stderr)
        assert done.stdout


def _into_a_closed_pipe(args: list[str]) -> subprocess.CompletedProcess[str]:
    read_end, write_end = os.pipe()
    os.close(read_end)  # closed before the child starts, so its first write fails: no race
    try:
        return subprocess.run(
            _canon(*args),
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize("strict", [False, True])
def test_a_policy_result_into_a_closed_pipe_keeps_its_own_exit_code(policy_files, strict):
    policy, response = policy_files
    failing = str(Path(response).with_name("failing.json"))
    Path(failing).write_text('{"y": 1}')
    args = ["policy", "evaluate", policy, failing, *(["--strict-exit"] if strict else [])]
    done = _into_a_closed_pipe(args)
    # as for `canon check | head` (cli.output): a reader that left says nothing about the run
    assert done.returncode == (1 if strict else 0), done.stderr
    assert done.stderr == ""


def _generate(*extra: str):  # type: ignore[no-untyped-def]
    args = ["contract", "generate", "--traces", str(ABC / "valid_claim.json"), *extra]
    return CliRunner().invoke(main, args, catch_exceptions=False)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", "--output '': expected a file path; omit --output to print to standard output"),
        ("  ", "--output '  ': expected a file path; omit --output to print to standard output"),
    ],
)
def test_generate_with_a_blank_output_is_a_usage_error(value, expected):
    result = _generate("--output", value)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == f"canon: error: {expected}\n"


def test_generate_into_a_directory_or_an_unwritable_place_is_a_usage_error(tmp_path):
    folder = _generate("--output", str(tmp_path))
    assert folder.exit_code == 2
    assert (
        folder.stderr
        == f"canon: error: --output {tmp_path}: is a directory; name a file to write\n"
    )
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    below_a_file = _generate("--output", str(blocker / "c.yaml"))
    assert below_a_file.exit_code == 2
    assert below_a_file.stderr.startswith(f"canon: error: --output {blocker / 'c.yaml'}: cannot")
    assert len(below_a_file.stderr.splitlines()) == 1
    assert blocker.read_text() == "x"


def test_generate_with_an_empty_output_in_a_real_process_exits_two(tmp_path):
    done = subprocess.run(
        _canon("contract", "generate", "--traces", str(ABC / "valid_claim.json"), "--output", ""),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "canon: error: --output '': expected a file path; omit --output to print to standard output"
    ]
    assert list(tmp_path.iterdir()) == []  # nothing was written in the working directory


@pytest.mark.parametrize("kind", ["blank", "file"])
def test_monitor_refuses_an_output_dir_that_is_blank_or_a_file(tmp_path, kind):
    target = ""
    if kind == "file":
        target = str(tmp_path / "f.txt")
        Path(target).write_text("x")
    result = CliRunner().invoke(
        main,
        [
            *("contract", "monitor", str(tmp_path), "--contract", "claims-processing-v1"),
            *("--output-dir", target, "--max-polls", "1", "--poll-interval", "0"),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 2
    assert len(result.stderr.splitlines()) == 1
    assert "--output-dir" in result.stderr
