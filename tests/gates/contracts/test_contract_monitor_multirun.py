"""The directory monitor on files that hold several runs: one verdict and record per run.

The recordings are the real ones ``test_contract_multirun.py`` reads: Monocle's Anthropic
test file (five separate calls) and the OpenInference Vercel export (two runs).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from canon.cli import main as cli
from canon.gates.contracts import load_contract
from canon.monitor import monitor_directory
from canon.monitor.ledger import JOURNAL_FILE, read_journal

ROOT = Path(__file__).resolve().parents[3]
REAL = ROOT / "tests" / "corpus" / "real-traces"
ABC = ROOT / "tests" / "corpus" / "traces" / "abc-examples"
FIVE = REAL / "monocle" / "test_anthropic_finish_reason_integration.json"
TWO = REAL / "openinference" / "vercel_v6_generateText.json"
FIVE_IDS = [
    "faa65a4b6fdeabb83e02f48c72ebf343",
    "9b0481621bea764dcebd0dda971e6ba7",
    "b85160188231bf64d5825468c6ba5075",
    "72ce072ca3b7e03e55231f589b699c22",
    "88bbd9f74bbd6e92f4529d0ad7812cec",
]
TWO_IDS = ["700d5f98fe2420adcf6ab0822f7a323c", "673a889f59126f8b4c90dce5a1f99368"]
# fails the runs that ask for a greeting, a story, the weather or a haiku (no such tool ran)
CONTRACT_TEXT = """\
name: greets-with-a-tool
version: "1"
constraints:
  - type: must_include_steps
    steps: [greeting_tool]
    when: {input_matches: "hello|story|weather|haiku"}
"""
CONTRACT = load_contract(CONTRACT_TEXT)
FAILING = {FIVE_IDS[0], FIVE_IDS[1], FIVE_IDS[4], TWO_IDS[0]}


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]


def _watch(tmp_path: Path) -> tuple[Path, Path]:
    watch, out = tmp_path / "in", tmp_path / "out"
    watch.mkdir()
    shutil.copy(FIVE, watch / "five.json")
    shutil.copy(TWO, watch / "two.json")
    return watch, out


def _monitor(watch: Path, out: Path, alerts: list[str] | None = None) -> Any:
    hook = (
        None if alerts is None else (lambda r: alerts.append(r.execution_summary["execution_id"]))
    )
    return monitor_directory(
        CONTRACT, watch, output_dir=out, settle=0, max_polls=1, on_violation=hook
    )


def _file_key(path: Path, name: str) -> str:
    return f"file:{name}#sha256:{hashlib.sha256(path.read_bytes()).hexdigest()}"


def test_each_run_of_a_file_gets_its_own_verdict_and_record(tmp_path: Path) -> None:
    watch, out = _watch(tmp_path)
    alerts: list[str] = []
    stats = _monitor(watch, out, alerts)
    assert (stats.validated, stats.passed, stats.failed, stats.errors) == (7, 3, 4, 0)
    records = _records(out)
    by_id = {record["trace_id"]: record for record in records}
    assert sorted(by_id) == sorted(FIVE_IDS + TWO_IDS)
    for trace_id, record in by_id.items():
        name = "five.json" if trace_id in FIVE_IDS else "two.json"
        assert record["trace"] == str(watch / name)
        assert record["execution_summary"]["execution_id"] == trace_id
        assert record["monitor_key"] == f"{_file_key(watch / name, name)}#{trace_id}"
        assert record["monitor_runs"] == (5 if name == "five.json" else 2)
        assert record["verdict"]["status"] == ("fail" if trace_id in FAILING else "pass")
    assert by_id[FIVE_IDS[0]]["execution_summary"]["input_preview"] == "Say hello."
    assert sorted(alerts) == sorted(FAILING)
    names = sorted(p.name for p in out.glob("*.json"))
    assert f"fail_five_{FIVE_IDS[0]}.json" in names and f"pass_two_{TWO_IDS[1]}.json" in names


def test_a_restart_reads_no_run_again(tmp_path: Path) -> None:
    watch, out = _watch(tmp_path)
    _monitor(watch, out)
    started: list[int] = []
    again = monitor_directory(
        CONTRACT, watch, output_dir=out, settle=0, max_polls=1, on_start=started.append
    )
    assert (again.validated, again.errors) == (0, 0)
    assert started == [7]
    assert len(_records(out)) == 7


def test_a_file_whose_runs_all_have_records_is_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    watch, out = _watch(tmp_path)
    _monitor(watch, out)

    def no_reading(*_: object, **__: object) -> None:
        raise AssertionError("a file whose every run has a record was read again")

    monkeypatch.setattr("canon.monitor.directory.read_trace_runs", no_reading)
    assert _monitor(watch, out).validated == 0


def test_a_kill_between_two_runs_validates_only_the_runs_without_a_record(
    tmp_path: Path,
) -> None:
    watch, out = _watch(tmp_path)
    first: list[str] = []
    _monitor(watch, out, first)
    # the disk as a kill after the first two of five.json's records leaves it: the later
    # runs have no record, and the one failing run among them was never alerted
    for record_path in out.glob("*five_*.json"):
        trace_id = json.loads(record_path.read_text())["trace_id"]
        if trace_id in FIVE_IDS[2:]:
            record_path.unlink()
    journal = out / JOURNAL_FILE
    kept = [
        line
        for line in journal.read_text().splitlines()
        if not json.loads(line)["alerted"].endswith(f"#{FIVE_IDS[4]}")
    ]
    journal.write_text("".join(f"{line}\n" for line in kept))
    assert len(read_journal(journal)) == 3
    again: list[str] = []
    stats = _monitor(watch, out, again)
    assert (stats.validated, stats.failed) == (3, 1)
    assert again == [FIVE_IDS[4]]
    records = _records(out)
    assert sorted(r["trace_id"] for r in records) == sorted(FIVE_IDS + TWO_IDS)
    assert len({r["monitor_key"] for r in records}) == 7


def test_a_record_from_before_run_keys_still_marks_its_file_done(tmp_path: Path) -> None:
    watch, out = tmp_path / "in", tmp_path / "out"
    watch.mkdir()
    out.mkdir()
    shutil.copy(ABC / "invalid_claim.json", watch / "a.json")
    # what an older monitor wrote: the file's key alone, no trace id, no run count
    old = {
        "trace": str(watch / "a.json"),
        "verdict": {"status": "fail"},
        "monitor_key": _file_key(watch / "a.json", "a.json"),
    }
    (out / "fail_a.json").write_text(json.dumps(old))
    alerts: list[str] = []
    stats = _monitor(watch, out, alerts)
    assert (stats.validated, stats.errors, alerts) == (0, 0, [])
    assert [p.name for p in out.glob("*.json")] == ["fail_a.json"]


def test_a_single_run_file_keeps_its_plain_record_name(tmp_path: Path) -> None:
    watch, out = tmp_path / "in", tmp_path / "out"
    watch.mkdir()
    shutil.copy(ABC / "valid_claim.json", watch / "a.json")
    _monitor(watch, out)
    (record,) = _records(out)
    assert [p.name for p in out.glob("*.json")] == ["pass_a.json"]
    assert (record["trace_id"], record["monitor_runs"]) == ("trace-valid-001", 1)
    assert record["monitor_key"] == f"{_file_key(watch / 'a.json', 'a.json')}#trace-valid-001"


def _span(trace_id: str, span_id: str, start_s: int, name: str) -> dict[str, Any]:
    return {
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "startTimeUnixNano": str(start_s * 10**9),
        "endTimeUnixNano": str(start_s * 10**9 + 10**8),
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
        ],
    }


def test_a_trace_id_unfit_for_a_file_name_is_made_safe_in_the_record_name(tmp_path: Path) -> None:
    watch, out = tmp_path / "in", tmp_path / "out"
    watch.mkdir()
    spans = [
        _span("run/1", "a1", 100, "invoke_agent a"),
        _span("run/2", "b1", 200, "invoke_agent b"),
    ]
    document = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    (watch / "runs.json").write_text(json.dumps(document))
    stats = _monitor(watch, out)
    assert stats.validated == 2
    assert sorted(p.name for p in out.glob("*.json")) == [
        "pass_runs_run_1.json",
        "pass_runs_run_2.json",
    ]
    assert sorted(r["trace_id"] for r in _records(out)) == ["run/1", "run/2"]


def test_the_command_names_the_trace_id_in_each_alert_line(tmp_path: Path) -> None:
    watch, out = _watch(tmp_path)
    contract_file = tmp_path / "contract.yaml"
    contract_file.write_text(CONTRACT_TEXT)
    result = CliRunner().invoke(
        cli,
        [
            *("contract", "monitor", str(watch), "--contract", str(contract_file)),
            *("--output-dir", str(out), "--max-polls", "1", "--settle", "0"),
        ],
    )
    assert result.exit_code == 0, result.output
    alerts = [line for line in result.stdout.splitlines() if line.startswith("FAIL ")]
    expected = [
        f"FAIL  {watch / ('five.json' if t in FIVE_IDS else 'two.json')} [{t}]" for t in FAILING
    ]
    assert sorted(alerts) == sorted(expected)
    assert "validated 7 trace(s) in 1 poll(s): 3 passed, 4 failed" in result.stdout
