"""Exit codes come from one enum (canon.errors.ExitCode), and its values are the documented ones."""

from __future__ import annotations

import re
from pathlib import Path

from canon.errors import (
    BudgetExceededError,
    CanonError,
    ExitCode,
    JudgeUnavailableError,
    TelemetryExportError,
)

ROOT = Path(__file__).resolve().parents[1]
# A literal number handed to an exit call, or assigned as an exit code.
BARE_EXIT = re.compile(
    r"(?:sys\.exit|ctx\.exit|\.exit|SystemExit)\(\s*-?\d"
    r"|exit_code\s*(?::[^=]*)?=\s*\d"
    r"|\bcode\s*=\s*\d"
)


def test_the_enum_keeps_the_documented_values() -> None:
    assert {code.name: int(code) for code in ExitCode} == {
        "OK": 0,
        "FAILED": 1,
        "USAGE_ERROR": 2,
        "JUDGE_UNAVAILABLE": 3,
        "OVER_BUDGET": 4,
        "INTERNAL_ERROR": 5,
        "INCONCLUSIVE": 6,
        "INTERRUPTED": 130,
    }
    for doc in (ROOT / "docs" / "cli.md", ROOT / "README.md"):
        rows = set(re.findall(r"^\| `(\d+)` \|", doc.read_text(encoding="utf-8"), re.M))
        assert rows == {str(c.value) for c in ExitCode if c is not ExitCode.INTERRUPTED}, doc


def test_errors_carry_enum_members() -> None:
    assert CanonError.exit_code is ExitCode.USAGE_ERROR
    assert JudgeUnavailableError.exit_code is ExitCode.JUDGE_UNAVAILABLE
    assert TelemetryExportError.exit_code is ExitCode.JUDGE_UNAVAILABLE
    assert BudgetExceededError.exit_code is ExitCode.OVER_BUDGET


def test_no_module_writes_a_bare_exit_number() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted((ROOT / "canon").rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if BARE_EXIT.search(line) and not line.lstrip().startswith("#")
    ]
    assert found == []


def test_the_pattern_catches_a_bare_number() -> None:
    # the guard above is only worth something if it would see the old spellings
    olds = (
        "sys.exit(2)",
        "ctx.exit(1)",
        "    exit_code = 2",
        "exit_code: int = 2",
        "code = 3 if x else 0",
    )
    for old in olds:
        assert BARE_EXIT.search(old), old
    assert not BARE_EXIT.search("sys.exit(ExitCode.FAILED)")
