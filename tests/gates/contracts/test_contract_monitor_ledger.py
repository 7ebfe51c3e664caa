"""The monitors' durable memory: the alert journal, torn lines, its lock, a kill's leftovers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from canon.cli import main as cli
from canon.gates.contracts import load_template
from canon.monitor import monitor_directory
from canon.monitor.ledger import JOURNAL_FILE, Ledger, LedgerError, read_journal

CLAIMS = load_template("claims-processing-v1")


def _invalid(corpus_dir: Path, target: Path) -> None:
    target.parent.mkdir(exist_ok=True)
    shutil.copy(corpus_dir / "abc-examples" / "invalid_claim.json", target)


def _run(watch: Path, out: Path, alerts: list[str]) -> None:
    monitor_directory(
        CLAIMS,
        watch,
        output_dir=out,
        settle=0,
        on_violation=lambda record: alerts.append(str(record.trace)),
        max_polls=1,
    )


def test_a_torn_last_journal_line_is_cut_off_and_the_next_line_starts_clean(tmp_path):
    journal = tmp_path / JOURNAL_FILE
    journal.write_text('{"alerted": "k1"}\n{"alerted": "k')  # killed in the middle of a write
    assert read_journal(journal) == {"k1"}
    assert journal.read_text() == '{"alerted": "k1"}\n'
    ledger = Ledger(tmp_path)
    ledger.finish("k2", {"verdict": {"status": "fail"}}, "two", alert=lambda: None)
    ledger.close()
    assert read_journal(journal) == {"k1", "k2"}


@pytest.mark.parametrize("line", ["not json", '{"alerted": 3}', "[1]"])
def test_a_damaged_journal_line_is_refused_naming_the_file_and_line(tmp_path, line):
    journal = tmp_path / JOURNAL_FILE
    journal.write_text(f'{{"alerted": "k1"}}\n{line}\n')
    with pytest.raises(LedgerError, match=rf"{JOURNAL_FILE}: line 2 is not a monitor journal"):
        Ledger(tmp_path)


def test_the_command_reports_a_damaged_journal_in_one_line(tmp_path, corpus_dir):
    watch, out = tmp_path / "in", tmp_path / "out"
    _invalid(corpus_dir, watch / "a.json")
    out.mkdir()
    (out / JOURNAL_FILE).write_text("garbage\n")
    result = CliRunner().invoke(
        cli,
        [
            *("contract", "monitor", str(watch), "--contract", "claims-processing-v1"),
            *("--output-dir", str(out), "--max-polls", "1", "--settle", "0"),
        ],
    )
    assert result.exit_code == 2
    assert f"{out / JOURNAL_FILE}: line 1 is not a monitor journal line" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not list(out.glob("*.json"))  # it stopped before validating anything


def test_a_second_monitor_on_the_same_output_directory_is_refused(tmp_path, corpus_dir):
    watch, out = tmp_path / "in", tmp_path / "out"
    _invalid(corpus_dir, watch / "a.json")
    holder = Ledger(out)
    try:
        with pytest.raises(LedgerError, match=r"another canon contract monitor is writing here"):
            Ledger(out)
        result = CliRunner().invoke(
            cli,
            [
                *("contract", "monitor", str(watch), "--contract", "claims-processing-v1"),
                *("--output-dir", str(out), "--max-polls", "1"),
            ],
        )
        assert result.exit_code == 2
        assert "give each monitor its own --output-dir" in result.output
    finally:
        holder.close()
    Ledger(out).close()  # released with its holder


def test_a_kill_after_the_alert_mark_but_before_the_record_sends_no_second_alert(
    tmp_path, corpus_dir
):
    watch, out = tmp_path / "in", tmp_path / "out"
    _invalid(corpus_dir, watch / "a.json")
    first: list[str] = []
    _run(watch, out, first)
    (record_path,) = out.glob("*.json")
    key = json.loads(record_path.read_text())["monitor_key"]
    record_path.unlink()  # the disk as a kill between the journal line and the record leaves it
    again: list[str] = []
    _run(watch, out, again)
    assert (first, again) == ([str(watch / "a.json")], [])
    (record_path,) = out.glob("*.json")
    assert json.loads(record_path.read_text())["monitor_key"] == key


def test_a_kill_between_the_alert_and_its_mark_repeats_that_alert_rather_than_lose_it(
    tmp_path, corpus_dir
):
    watch, out = tmp_path / "in", tmp_path / "out"
    _invalid(corpus_dir, watch / "a.json")
    sent: list[str] = []

    class Killed(BaseException):
        """Stands in for SIGKILL: nothing after the hook runs."""

    def alert_then_die(record: object) -> None:
        sent.append("alert")
        raise Killed

    with pytest.raises(Killed):
        monitor_directory(
            CLAIMS, watch, output_dir=out, settle=0, on_violation=alert_then_die, max_polls=1
        )
    assert not list(out.glob("*.json")) and read_journal(out / JOURNAL_FILE) == set()
    _run(watch, out, sent)
    assert sent == ["alert", str(watch / "a.json")]  # at least once: the only repeat possible
    assert len(list(out.glob("*.json"))) == 1


def test_without_an_output_directory_nothing_is_kept(tmp_path, corpus_dir):
    watch = tmp_path / "in"
    _invalid(corpus_dir, watch / "a.json")
    alerts: list[str] = []
    for _ in range(2):
        monitor_directory(
            CLAIMS, watch, settle=0, on_violation=lambda r: alerts.append("x"), max_polls=1
        )
    assert alerts == ["x", "x"]  # memory lives in the output directory only
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


def test_records_cannot_go_into_the_watched_directory(tmp_path, corpus_dir):
    watch = tmp_path / "in"
    _invalid(corpus_dir, watch / "a.json")
    result = CliRunner().invoke(
        cli,
        [
            *("contract", "monitor", str(watch), "--contract", "claims-processing-v1"),
            *("--output-dir", str(tmp_path / "in" / "."), "--max-polls", "1"),
        ],
    )
    assert result.exit_code == 2
    assert "cannot go into the watched directory" in result.output
    assert sorted(p.name for p in watch.iterdir()) == ["a.json"]
