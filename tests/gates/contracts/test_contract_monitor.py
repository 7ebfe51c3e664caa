"""monitor_directory on a real directory: present files, arrivals, half-written files, restarts."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from canon.gates.contracts import load_template
from canon.monitor import monitor_directory

CLAIMS = load_template("claims-processing-v1")


def _copy(corpus_dir: Path, name: str, target: Path) -> None:
    shutil.copy(corpus_dir / "abc-examples" / name, target)


def _age(path: Path, seconds: float) -> None:
    """Make a file look last written ``seconds`` ago."""
    stamp = time.time() - seconds
    os.utime(path, (stamp, stamp))


def _no_wait(_: float) -> None:
    """The poll interval passes at once."""


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]


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
        CLAIMS,
        watch,
        output_dir=out,
        settle=0,
        on_violation=violations.append,
        max_polls=2,
        sleep=arrive,
    )
    assert (stats.validated, stats.passed, stats.failed, stats.errors) == (3, 2, 1, 0)
    assert stats.compliance_rate == 2 / 3
    assert [record.trace for record in violations] == [str(watch / "b.json")]
    assert sorted(p.name for p in out.glob("*.json")) == [
        "fail_b.json",
        "pass_a.json",
        "pass_c.json",
    ]
    stored = json.loads((out / "fail_b.json").read_text())
    assert stored["verdict"]["status"] == "fail" and stored["contract_name"] == CLAIMS.name


def test_a_file_still_being_written_is_pending_not_an_error(tmp_path, corpus_dir):
    watch, out = tmp_path / "in", tmp_path / "out"
    watch.mkdir()
    text = (corpus_dir / "abc-examples" / "valid_claim.json").read_text()
    target = watch / "slow.json"
    target.write_text(text[: len(text) // 2])
    polls: list[int] = []

    def write_slowly(_: float) -> None:
        polls.append(1)
        if len(polls) == 2:  # half of it sat there for three polls, then the rest came
            target.write_text(text)

    stats = monitor_directory(
        CLAIMS, watch, output_dir=out, settle=5, max_polls=3, sleep=write_slowly
    )
    assert (stats.validated, stats.errors, stats.pending) == (0, 0, 1)
    assert not list(out.glob("*.json"))
    _age(target, 10)  # then it stayed unchanged past the settle window
    stats = monitor_directory(CLAIMS, watch, output_dir=out, settle=5, max_polls=1)
    assert (stats.validated, stats.passed, stats.errors, stats.pending) == (1, 1, 0, 0)
    assert [p.name for p in out.glob("*.json")] == ["pass_slow.json"]


def test_the_settle_window_is_measured_against_the_files_last_change(tmp_path, corpus_dir):
    watch = tmp_path / "in"
    watch.mkdir()
    _copy(corpus_dir, "valid_claim.json", watch / "a.json")
    written = (watch / "a.json").stat().st_mtime
    early = monitor_directory(CLAIMS, watch, settle=5, max_polls=1, clock=lambda: written + 4.9)
    late = monitor_directory(CLAIMS, watch, settle=5, max_polls=1, clock=lambda: written + 5.1)
    assert (early.validated, early.pending) == (0, 1)
    assert (late.validated, late.pending) == (1, 0)


def test_a_file_that_never_parses_is_an_error_once_even_across_restarts(tmp_path, corpus_dir):
    watch, out = tmp_path / "in", tmp_path / "out"
    watch.mkdir()
    (watch / "junk.json").write_text("{not json")
    (watch / "empty.json").write_text("{}")
    first = monitor_directory(CLAIMS, watch, output_dir=out, settle=0, max_polls=3, sleep=_no_wait)
    again = monitor_directory(CLAIMS, watch, output_dir=out, settle=0, max_polls=3, sleep=_no_wait)
    assert (first.validated, first.errors, first.pending) == (0, 2, 0)
    assert first.compliance_rate is None
    assert (again.validated, again.errors, again.pending) == (0, 0, 0)
    assert sorted(p.name for p in out.glob("*.json")) == ["error_empty.json", "error_junk.json"]
    assert "junk.json" in json.loads((out / "error_junk.json").read_text())["trace"]
    # once it changes it is new content and read again: here it became a trace
    _copy(corpus_dir, "valid_claim.json", watch / "junk.json")
    stats = monitor_directory(CLAIMS, watch, output_dir=out, settle=0, max_polls=1)
    assert (stats.validated, stats.passed, stats.errors) == (1, 1, 0)


def test_an_unreadable_file_is_reported_with_its_reason_once_per_version(tmp_path):
    watch = tmp_path / "in"
    watch.mkdir()
    (watch / "junk.json").write_text("{not json")
    reported: list[tuple[Path, str]] = []

    def note(path: Path, problem: str) -> None:
        reported.append((path, problem))

    stats = monitor_directory(
        CLAIMS, watch, settle=0, on_unreadable=note, max_polls=3, sleep=_no_wait
    )
    assert stats.errors == 1
    ((path, problem),) = reported
    assert path == watch / "junk.json"
    assert problem.startswith(f"{watch / 'junk.json'}: not a trace: not JSON")


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux's /proc")
def test_a_file_the_system_cannot_read_is_counted_and_reported_not_skipped(tmp_path):
    watch = tmp_path / "in"
    watch.mkdir()
    # a regular file whose read fails (EIO at offset 0), for root too, unlike chmod 000
    (watch / "mem.json").symlink_to("/proc/self/mem")
    reported: list[str] = []

    def note(path: Path, problem: str) -> None:
        reported.append(problem)

    stats = monitor_directory(
        CLAIMS, watch, settle=0, on_unreadable=note, max_polls=3, sleep=_no_wait
    )
    assert (stats.validated, stats.errors) == (0, 1)
    assert reported == [f"{watch / 'mem.json'}: cannot be read: Input/output error"]


def test_a_restart_neither_repeats_nor_skips_a_trace_nor_its_alert(tmp_path, corpus_dir):
    watch, out = tmp_path / "in", tmp_path / "out"
    watch.mkdir()
    _copy(corpus_dir, "valid_claim.json", watch / "a.json")
    _copy(corpus_dir, "invalid_claim.json", watch / "b.json")
    alerts: list[str | None] = []

    def run() -> Any:
        return monitor_directory(
            CLAIMS,
            watch,
            output_dir=out,
            settle=0,
            on_violation=lambda record: alerts.append(record.trace),
            max_polls=1,
        )

    run()
    _copy(corpus_dir, "invalid_claim.json", watch / "c.json")  # arrives while it is down
    second = run()
    third = run()
    assert (second.validated, second.failed) == (1, 1)  # c only
    assert third.validated == 0
    assert alerts == [str(watch / "b.json"), str(watch / "c.json")]
    assert sorted(p.name for p in out.glob("*.json")) == [
        "fail_b.json",
        "fail_c.json",
        "pass_a.json",
    ]
    # file:<name>#sha256:<digest>#<trace id>: a run is known by its file and its trace id
    keys = sorted(record["monitor_key"].split("#") for record in _records(out))
    assert [name for name, _, _ in keys] == ["file:a.json", "file:b.json", "file:c.json"]
    assert all(digest.startswith("sha256:") and len(digest) == 71 for _, digest, _ in keys)
    assert [r["trace_id"] for r in _records(out)] == [
        r["execution_summary"]["execution_id"] for r in _records(out)
    ]
    assert [trace_id for _, _, trace_id in keys] == [
        "trace-valid-001",
        "trace-invalid-001",
        "trace-invalid-001",
    ]


def test_a_file_rewritten_with_new_content_is_a_new_trace(tmp_path, corpus_dir):
    watch, out = tmp_path / "in", tmp_path / "out"
    watch.mkdir()
    _copy(corpus_dir, "valid_claim.json", watch / "a.json")
    monitor_directory(CLAIMS, watch, output_dir=out, settle=0, max_polls=1)
    _copy(corpus_dir, "invalid_claim.json", watch / "a.json")
    stats = monitor_directory(CLAIMS, watch, output_dir=out, settle=0, max_polls=2, sleep=_no_wait)
    assert (stats.validated, stats.failed) == (1, 1)
    assert sorted(p.name for p in out.glob("*.json")) == ["fail_a.json", "pass_a.json"]


def test_audit_record_names_never_collide(tmp_path, corpus_dir):
    watch, out = tmp_path / "in", tmp_path / "out"
    watch.mkdir()
    out.mkdir()
    (out / "pass_a.json").write_text("{}")  # not a record of this monitor: no key
    _copy(corpus_dir, "valid_claim.json", watch / "a.json")
    monitor_directory(CLAIMS, watch, output_dir=out, settle=0, max_polls=1)
    assert sorted(p.name for p in out.glob("*.json")) == ["pass_a.json", "pass_a_2.json"]


def test_monitor_stops_on_keyboard_interrupt_and_returns_statistics(tmp_path, corpus_dir):
    watch = tmp_path / "in"
    watch.mkdir()
    _copy(corpus_dir, "valid_claim.json", watch / "a.json")

    def interrupt(_: float) -> None:
        raise KeyboardInterrupt

    stats = monitor_directory(CLAIMS, watch, settle=0, sleep=interrupt)
    assert stats.interrupted and stats.passed == 1 and stats.polls == 1


def test_monitor_stop_hook_ends_the_loop(tmp_path):
    watch = tmp_path / "in"
    watch.mkdir()
    polls = []
    stats = monitor_directory(
        CLAIMS, watch, stop=lambda: len(polls) >= 2, sleep=lambda _: polls.append(1)
    )
    assert stats.polls == 3 and stats.validated == 0
