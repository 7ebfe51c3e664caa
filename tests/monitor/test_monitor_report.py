"""canon monitor report over a directory monitor's records: the summary, the page, errors."""

from __future__ import annotations

import json
from pathlib import Path

from canon.core.online import Decision, DecisionKind

from support.cli import run_canon


def _write(directory: Path, name: str, decision: object) -> None:
    directory.mkdir(exist_ok=True)
    (directory / name).write_text(json.dumps({"trace": name, "decision": decision}))


def test_the_report_summarizes_decisions_and_draws_a_plot_per_principle(tmp_path: Path) -> None:
    records = tmp_path / "out"
    for n in range(8):
        held = n % 4 != 0
        verdict = "canon" if held else "non_canon"
        judged = Decision(DecisionKind.JUDGED, f"t{n}", 7200.0 * n, verdict, 0.8,
                          {"P1": True, "P2": held}, cost=0.5)  # fmt: skip
        _write(records, f"pass_{n}.json", judged.to_dict())
    _write(records, "pass_x.json", Decision(DecisionKind.BUDGET_DROPPED, "x", 1.0).to_dict())
    (records / "notes.txt").write_text("not a record")
    (records / "pass_y.json").write_text(json.dumps({"trace": "contract only"}))
    page = tmp_path / "trend.html"
    result = run_canon(tmp_path, "monitor", "report", "--records", str(records),
                       "--html", str(page), "--period", "7200")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "9 trace(s) decided: 0 sampled-out, 8 judged, 1 budget-dropped" in result.stdout
    assert "P2 held: 75.0% (6/8; 95% Wilson 40.9%-92.9%)" in result.stdout
    assert "judge spend: $4.0000" in result.stdout
    text = page.read_text()
    assert text.count("<svg") == 3 and text.count("<circle") == 8 * 3
    data = json.loads(
        run_canon(tmp_path, "monitor", "report", "--records", str(records), "--json").stdout
    )
    assert data["principles"]["P2"]["held"] == 6 and data["counts"]["budget-dropped"] == 1


def test_a_damaged_decision_is_exit_2_naming_its_file(tmp_path: Path) -> None:
    records = tmp_path / "out"
    _write(records, "pass_a.json", {"kind": "judged", "trace_id": "t", "at": 1})
    result = run_canon(tmp_path, "monitor", "report", "--records", str(records))
    assert result.returncode == 2
    assert "pass_a.json" in result.stderr and "canon or non_canon" in result.stderr


def test_records_that_are_no_directory_are_exit_2(tmp_path: Path) -> None:
    result = run_canon(tmp_path, "monitor", "report", "--records", str(tmp_path / "none"))
    assert result.returncode == 2
    assert "not a directory of audit records" in result.stderr
