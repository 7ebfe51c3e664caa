"""monitor_directory on a real directory: present files, arrivals, half-written files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from canon.gates.contracts import load_template
from canon.monitor import monitor_directory

CLAIMS = load_template("claims-processing-v1")


def _copy(corpus_dir: Path, name: str, target: Path) -> None:
    shutil.copy(corpus_dir / "abc-examples" / name, target)


def test_monitor_validates_files_present_at_start_and_new_arrivals(tmp_path, corpus_dir):
    watch, out = tmp_path / "in", tmp_path / "out"
    watch.mkdir()
    _copy(corpus_dir, "valid_claim.json", watch / "a.json")
    _copy(corpus_dir, "invalid_claim.json", watch / "b.json")
    violations = []

    def arrive(_: float) -> None:
        if not (watch / "c.json").exists():
            _copy(corpus_dir, "valid_claim.json", watch / "c.json")

    stats = monitor_directory(
        CLAIMS, watch, output_dir=out, on_violation=violations.append, max_polls=2, sleep=arrive
    )
    assert (stats.validated, stats.passed, stats.failed, stats.errors) == (3, 2, 1, 0)
    assert stats.compliance_rate == 2 / 3
    assert [record.trace for record in violations] == [str(watch / "b.json")]
    assert sorted(p.name for p in out.iterdir()) == ["fail_b.json", "pass_a.json", "pass_c.json"]
    stored = json.loads((out / "fail_b.json").read_text())
    assert stored["verdict"]["status"] == "fail" and stored["contract_name"] == CLAIMS.name


def test_monitor_retries_a_file_written_in_two_halves(tmp_path, corpus_dir):
    watch = tmp_path / "in"
    watch.mkdir()
    text = (corpus_dir / "abc-examples" / "valid_claim.json").read_text()
    target = watch / "slow.json"
    target.write_text(text[: len(text) // 2])

    def finish_writing(_: float) -> None:
        target.write_text(text)

    stats = monitor_directory(CLAIMS, watch, max_polls=2, sleep=finish_writing)
    assert (stats.validated, stats.passed, stats.errors, stats.pending) == (1, 1, 0, 0)


def test_monitor_gives_up_on_a_file_that_stays_broken(tmp_path):
    watch, out = tmp_path / "in", tmp_path / "out"
    watch.mkdir()
    (watch / "junk.json").write_text("{not json")
    (watch / "empty.json").write_text("{}")
    stats = monitor_directory(CLAIMS, watch, output_dir=out, max_polls=3, sleep=lambda _: None)
    assert (stats.validated, stats.errors, stats.pending) == (0, 2, 0)
    assert stats.compliance_rate is None
    records = sorted(p.name for p in out.iterdir())
    assert records == ["error_empty.json", "error_junk.json"]
    assert "junk.json" in json.loads((out / "error_junk.json").read_text())["trace"]


def test_audit_record_names_never_collide(tmp_path, corpus_dir):
    watch, out = tmp_path / "in", tmp_path / "out"
    watch.mkdir()
    out.mkdir()
    (out / "pass_a.json").write_text("{}")
    _copy(corpus_dir, "valid_claim.json", watch / "a.json")
    monitor_directory(CLAIMS, watch, output_dir=out, max_polls=1)
    assert sorted(p.name for p in out.iterdir()) == ["pass_a.json", "pass_a_2.json"]


def test_monitor_stops_on_keyboard_interrupt_and_returns_statistics(tmp_path, corpus_dir):
    watch = tmp_path / "in"
    watch.mkdir()
    _copy(corpus_dir, "valid_claim.json", watch / "a.json")

    def interrupt(_: float) -> None:
        raise KeyboardInterrupt

    stats = monitor_directory(CLAIMS, watch, sleep=interrupt)
    assert stats.interrupted and stats.passed == 1 and stats.polls == 1


def test_monitor_stop_hook_ends_the_loop(tmp_path):
    watch = tmp_path / "in"
    watch.mkdir()
    polls = []
    stats = monitor_directory(
        CLAIMS, watch, stop=lambda: len(polls) >= 2, sleep=lambda _: polls.append(1)
    )
    assert stats.polls == 3 and stats.validated == 0
