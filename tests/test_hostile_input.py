"""Hostile input through real `canon` processes: every bad file is exit 2 naming the file.

Each case damages one file of a copy of the bundled example project and checks the exit
code, that stderr is one line naming the file and the problem (never a traceback), and that
nothing was written: no baseline, no cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
Damage = Callable[[Path], None]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the example project (mock judge, policy and contract gates)."""
    target = tmp_path / "project"
    shutil.copytree(EXAMPLES, target, ignore=shutil.ignore_patterns("baselines", ".canon"))
    return target


def _canon(cwd: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "canon.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )


def _one_error_line(completed: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in completed.stderr, completed.stderr
    lines = [line for line in completed.stderr.splitlines() if not line.startswith("[")]
    assert len(lines) == 1, completed.stderr
    assert lines[0].startswith("canon: error: "), lines[0]
    return lines[0]


def _replace(path: str, old: str, new: str) -> Damage:
    def damage(project: Path) -> None:
        file = project / path
        text = file.read_text(encoding="utf-8")
        assert old in text
        file.write_text(text.replace(old, new, 1), encoding="utf-8")

    return damage


def _write(path: str, data: str | bytes) -> Damage:
    def damage(project: Path) -> None:
        file = project / path
        if isinstance(data, bytes):
            file.write_bytes(data)
        else:
            file.write_text(data, encoding="utf-8")

    return damage


def _symlink_loop(path: str) -> Damage:
    def damage(project: Path) -> None:
        file = project / path
        file.unlink(missing_ok=True)
        other = file.with_name(file.name + ".other")
        os.symlink(other.name, file)
        os.symlink(file.name, other)

    return damage


def _fifo(path: str) -> Damage:
    def damage(project: Path) -> None:
        file = project / path
        file.unlink(missing_ok=True)
        os.mkfifo(file)

    return damage


def _nested_yaml(key: str, depth: int = 300) -> str:
    return f"{key}: " + "[" * depth + "]" * depth + "\n"


DEEP_JSON = "[" * 1000 + "]" * 1000
TRACE = "traces/duplicate-charge.json"
RESPONSE = "responses/large-refund.json"

CASES: dict[str, tuple[Damage, str, str]] = {
    # name: (damage, file named in the message, problem named in the message)
    "yaml nested 300 levels in canon.yaml": (
        _write("canon.yaml", _nested_yaml("threshold")),
        "canon.yaml",
        "nested deeper than 64 levels",
    ),
    "yaml nested 300 levels in the constitution": (
        _write("constitution.yaml", _nested_yaml("mission")),
        "constitution.yaml",
        "nested deeper than 64 levels",
    ),
    "yaml nested 300 levels in the suite": (
        _write("suite.yaml", _nested_yaml("artifacts")),
        "suite.yaml",
        "nested deeper than 64 levels",
    ),
    "json nested 1000 levels in a response file": (
        _write(RESPONSE, DEEP_JSON),
        RESPONSE,
        "nesting is far too deep",
    ),
    "a response file with a duplicate member": (
        _write(RESPONSE, '{"amount_eur": 1, "amount_eur": 900}'),
        RESPONSE,
        'duplicate object member "amount_eur"',
    ),
    "a response file over the policy gate's size limit": (
        _write(RESPONSE, " " * 1_000_001 + "{}"),
        RESPONSE,
        "larger than the limit of 1,000,000 bytes",
    ),
    "a .env that is not UTF-8": (_write(".env", b"TOKEN=\xff\xfe\n"), ".env", "not UTF-8"),
    "a .env that is a directory": (lambda p: (p / ".env").mkdir(), ".env", "is a directory"),
    "a trace that is /dev/zero (allowed outside)": (
        lambda p: (
            _replace("canon.yaml", "threshold:", "allow_outside_paths: true\nthreshold:")(p),
            _replace("suite.yaml", TRACE, "/dev/zero")(p),
        ),
        "/dev/zero",
        "is a device or socket, expected a regular file",
    ),
    "a trace that is a FIFO": (_fifo(TRACE), TRACE, "is a FIFO"),
    "a response that is a FIFO": (_fifo(RESPONSE), RESPONSE, "is a FIFO"),
    "a policy that is a FIFO": (_fifo("policy.json"), "policy.json", "is a FIFO"),
    "a contract that is a FIFO": (_fifo("contract.yaml"), "contract.yaml", "is a FIFO"),
    "a constitution that is a symlink loop": (
        _symlink_loop("constitution.yaml"),
        "constitution.yaml",
        "Too many levels of symbolic links",
    ),
    "a contract with a duplicate key": (
        _replace("contract.yaml", "constraints:", "name: again\nconstraints:"),
        "contract.yaml",
        "duplicate key 'name'",
    ),
    "a suite with a duplicate key": (
        _write("suite.yaml", "artifacts: [hello]\nartifacts: [bye]\n"),
        "suite.yaml",
        "duplicate key 'artifacts'",
    ),
    "a trace outside the project": (
        _replace("suite.yaml", TRACE, "../../outside.json"),
        "suite.yaml",
        "outside the project",
    ),
    "an absolute response path": (
        _replace("suite.yaml", RESPONSE, "/etc/hostname.json"),
        "suite.yaml",
        "outside the project",
    ),
    "a trace symlinked out of the project": (
        lambda p: ((p / TRACE).unlink(), os.symlink("/etc/passwd", p / TRACE)),
        "suite.yaml",
        "resolves to /etc/passwd, outside the project",
    ),
    "max_tokens: -5": (
        _write("canon.yaml", "judge_options:\n  max_tokens: -5\n"),
        "canon.yaml",
        "judge option 'max_tokens' must be between 1 and 1000000, got -5",
    ),
    "timeout: 1.0e308": (
        _write("canon.yaml", "judge_options:\n  timeout: 1.0e+308\n"),
        "canon.yaml",
        "judge option 'timeout' must be between",
    ),
    "a policy that is not a valid policy": (
        _write("policy.json", '{"schema_version": "2.0"}'),
        "policy.json",
        "missing field(s)",
    ),
    "a trace that is no trace": (_write(TRACE, "{}"), TRACE, "not a trace"),
    "a contract whose constraint type is a list": (
        _replace("contract.yaml", "type: must_retrieve_from", "type: [must_retrieve_from]"),
        "contract.yaml",
        "unknown constraint type ['must_retrieve_from']",
    ),
    "a trace holding an integer of 5000 digits": (
        _write(TRACE, '{"resourceSpans": [' + "1" * 5000 + "]}"),
        TRACE,
        "the trace is not valid JSON: Exceeds the limit",
    ),
    "a suite text with a lone surrogate escape": (
        _write("suite.yaml", 'artifacts:\n  - text: "\\ud800"\n'),
        "suite.yaml",
        "lone surrogate",
    ),
    "a constitution with a lone surrogate escape": (
        _write("constitution.yaml", 'mission: "x \\udfff"\nprinciples: [a]\n'),
        "constitution.yaml",
        "lone surrogate",
    ),
    "a judge_model of the wrong form": (
        _replace("canon.yaml", "mock:judge-script.yaml", "nonsense"),
        "canon.yaml",
        "judge_model 'nonsense' is not of the form provider:model",
    ),
    "a mock judge script naming a label the question lacks": (
        _write("judge-script.yaml", "__default__: maybe\n"),
        "judge-script.yaml",
        "answered 'maybe'",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_input_is_exit_2_naming_the_file_and_writes_nothing(
    project: Path, case: str
) -> None:
    damage, file, problem = CASES[case]
    damage(project)
    completed = _canon(project, "accept", timeout=30)
    assert completed.returncode == 2, completed.stdout + completed.stderr
    line = _one_error_line(completed)
    assert file in line and problem in line, line
    assert not (project / "baselines").exists() and not (project / ".canon").exists()


@pytest.mark.parametrize("damage", [_symlink_loop("baselines/suite.json")], ids=["symlink loop"])
def test_a_baseline_that_cannot_be_read_is_exit_2_naming_it(project: Path, damage: Damage) -> None:
    (project / "baselines").mkdir()
    damage(project)
    completed = _canon(project, "check")
    assert completed.returncode == 2
    line = _one_error_line(completed)
    assert "baselines/suite.json" in line and "Too many levels of symbolic links" in line


@pytest.mark.parametrize(
    ("text", "problem"),
    [(DEEP_JSON, "nested too deeply"), ('{"rubric": 1, "rubric": 2}', "duplicate object member")],
)
def test_a_baseline_nested_too_deeply_or_with_duplicates_is_exit_2(
    project: Path, text: str, problem: str
) -> None:
    (project / "baselines").mkdir()
    (project / "baselines" / "suite.json").write_text(text)
    completed = _canon(project, "check")
    assert completed.returncode == 2
    line = _one_error_line(completed)
    assert "baselines/suite.json" in line and problem in line


def test_a_config_named_by_config_that_is_a_symlink_loop_is_exit_2(project: Path) -> None:
    _symlink_loop("loop.yaml")(project)
    completed = _canon(project, "score", "--config", "loop.yaml")
    assert completed.returncode == 2
    line = _one_error_line(completed)
    assert "loop.yaml" in line and "Too many levels of symbolic links" in line


@pytest.mark.parametrize("kind", ["directory", "symlink loop"])
def test_a_canon_yaml_found_during_discovery_that_is_unusable_is_an_error(
    project: Path, kind: str
) -> None:
    inner = project / "inner"
    inner.mkdir()
    if kind == "directory":
        (inner / "canon.yaml").mkdir()
    else:
        _symlink_loop("inner/canon.yaml")(project)
    completed = _canon(inner, "score")
    assert completed.returncode == 2  # not silently skipped for the project's canon.yaml
    line = _one_error_line(completed)
    assert str(inner / "canon.yaml") in line


def test_allow_outside_paths_lets_a_suite_name_files_elsewhere(
    project: Path, tmp_path: Path
) -> None:
    shutil.move(project / RESPONSE, tmp_path / "elsewhere.json")
    _replace("suite.yaml", RESPONSE, str(tmp_path / "elsewhere.json"))(project)
    assert _canon(project, "score", "--quiet").returncode == 2
    _replace("canon.yaml", "threshold:", "allow_outside_paths: true\nthreshold:")(project)
    completed = _canon(project, "score", "--quiet")
    assert completed.returncode == 0, completed.stderr


def test_control_characters_in_artifact_ids_are_escaped_in_text_output(project: Path) -> None:
    (project / "suite.yaml").write_text(
        'artifacts:\n  - id: "evil\\e[2J\\e]0;owned\\a\\u202e"\n    text: I refunded it.\n'
    )
    completed = _canon(project, "score")
    assert completed.returncode == 0, completed.stderr
    for stream in (completed.stdout, completed.stderr):
        assert "\x1b" not in stream and "\x07" not in stream and "\u202e" not in stream
    assert "evil\\x1b[2J\\x1b]0;owned\\x07\\u202e" in completed.stdout
    assert "evil\\x1b[2J" in completed.stderr  # the progress line


_FAULTY = (
    "import sys, canon.cli.run as run\n"
    "def broken(*args, **kwargs):\n"
    "    raise ZeroDivisionError('division by zero\\nsecond line')\n"
    "run.load_run = broken\n"
    "import canon.cli.score  # noqa\n"
    "canon.cli.score.load_run = broken\n"
    "from canon.cli import main\n"
    "main(sys.argv[1:], prog_name='canon')\n"
)


def test_an_unexpected_exception_is_exit_4_with_one_line_never_exit_1(project: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-c", _FAULTY, "score"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 5
    assert "Traceback" not in completed.stderr
    (line,) = completed.stderr.splitlines()
    assert line.startswith("canon: internal error in 'canon score': ZeroDivisionError: ")
    assert "division by zero second line" in line and "please report" in line


def test_an_internal_error_shows_its_traceback_when_asked(project: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-c", _FAULTY, "score"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "CANON_TRACEBACK": "1"},
    )
    assert completed.returncode == 5
    assert "Traceback" in completed.stderr and "in broken" in completed.stderr


def test_an_exception_escaping_any_subcommand_is_exit_4(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    import canon.cli.policy as policy_cli
    from canon.cli import main

    def broken(source: str, what: str) -> bytes:
        raise LookupError("no such codec")

    monkeypatch.setattr(policy_cli, "read_input", broken)
    args = ["policy", "evaluate", "policy.json", "x.json"]
    result = CliRunner().invoke(main, args, prog_name="canon")
    assert result.exit_code == 5
    assert "internal error in 'canon policy evaluate': LookupError: no such codec" in (
        result.output
    )


def test_a_deliberate_error_raised_outside_a_command_body_keeps_its_exit_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from click.testing import CliRunner

    import canon.cli.policy as policy_cli
    from canon.cli import main
    from canon.errors import JudgeUnavailableError

    def unavailable(source: str, what: str) -> bytes:
        raise JudgeUnavailableError("the judge is down")

    monkeypatch.setattr(policy_cli, "read_input", unavailable)
    result = CliRunner().invoke(main, ["policy", "evaluate", "policy.json", "x.json"])
    assert result.exit_code == 3 and "canon: error: the judge is down" in result.output


def test_ctrl_c_is_never_exit_1(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    import canon.cli.policy as policy_cli
    from canon.cli import main

    def interrupted(source: str, what: str) -> bytes:
        raise KeyboardInterrupt

    monkeypatch.setattr(policy_cli, "read_input", interrupted)
    result = CliRunner().invoke(main, ["policy", "evaluate", "policy.json", "x.json"])
    assert result.exit_code == 130 and "canon: interrupted" in result.output


@pytest.mark.parametrize(
    ("damage", "args", "message"),
    [
        (_fifo("policy.json"), ["policy.json", RESPONSE], "policy file policy.json is not a"),
        (_write(RESPONSE, DEEP_JSON), ["policy.json", RESPONSE], f"response {RESPONSE} exceeds"),
        (
            _write("policy.json", '{"schema_version": "2.0"}'),
            ["policy.json", RESPONSE],
            "policy.json: policy has missing field(s)",
        ),
    ],
    ids=["policy fifo", "deep response", "invalid policy"],
)
def test_canon_policy_evaluate_names_the_bad_file(
    project: Path, damage: Damage, args: list[str], message: str
) -> None:
    import json

    damage(project)
    completed = _canon(project, "policy", "evaluate", *args, timeout=30)
    assert completed.returncode == 2 and completed.stdout == ""
    error = json.loads(completed.stderr)["error"]
    assert error["code"] in {"INVALID_JSON_INPUT", "INVALID_POLICY"}
    assert message in error["message"], error


def test_a_current_directory_removed_under_the_command_is_exit_2(tmp_path: Path) -> None:
    script = (
        "import os, sys\n"
        "os.chdir(sys.argv[1]); os.rmdir(sys.argv[1])\n"
        "from canon.cli import main\n"
        "main(['score'], prog_name='canon')\n"
    )
    gone = tmp_path / "gone"
    gone.mkdir()
    completed = subprocess.run(
        [sys.executable, "-c", script, str(gone)], capture_output=True, text=True, timeout=60
    )
    assert completed.returncode == 2
    assert "the current directory cannot be used" in _one_error_line(completed)


def test_a_report_path_that_is_a_device_or_fifo_is_refused_before_scoring(project: Path) -> None:
    os.mkfifo(project / "report.xml")
    completed = _canon(project, "score", "--junit-xml", "report.xml", "--html", "/dev/null")
    assert completed.returncode == 2
    line = _one_error_line(completed)
    assert "report path report.xml is not a regular file" in line
    assert (project / "report.xml").is_fifo() and Path("/dev/null").is_char_device()
