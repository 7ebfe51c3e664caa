"""A monitor's durable memory: which traces have a record, and which alerts were sent.

Exactly-once rests on one atomic step. The audit record *is* the "seen" mark: it carries
its trace's key (``monitor_key``) and appears under its final name in one ``link`` or
not at all, so a record never exists twice and a trace with a record is never validated
again. The ledger is rebuilt at start from the records in the output directory rather
than from a separate list that a kill could leave behind the records. Alerts leave the
process, so they cannot share that step: each is sent, then marked in an append-only
journal, then the record is written. A kill between an alert and its mark (two system
calls apart) repeats that one alert on restart rather than lose it; a kill after the mark
but before the record re-validates the trace and sends nothing. The journal itself holds
each alert exactly once, with its trace and status, for a notifier to follow. A torn last
line (a kill mid-write) is cut off on restart.

A file that holds several runs gets one record per run, each keyed ``<file key>#<trace
id>`` and stating how many runs its file holds (``monitor_runs``): a file is done once all
of them have a record, so a restart does not re-read it, and a kill between two runs'
records validates only the runs without one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from canon.core.online import Decision, budget_day
from canon.errors import InputError
from canon.project.contract_files import write_audit_record

JOURNAL_FILE = ".canon-monitor-alerts.jsonl"
KEY_FIELD = "monitor_key"
RUNS_FIELD = "monitor_runs"  # how many runs the record's file holds
TRACE_ID_FIELD = "trace_id"
DECISION_FIELD = "decision"  # the judging decision (canon.core.online.Decision), if judged
ONCE_FIELD = "once_key"  # the once key (trace, contract, constitution) the decision is under
SPANS_FIELD = "monitor_spans"  # the span ids a CloudWatch trace's decision covered


class LedgerError(InputError):
    """The output directory's journal is damaged, or another monitor is using it."""


class RecordKey(NamedTuple):
    """A record's monitor key; for a run of a file, the file's key and its number of runs."""

    key: str
    file_key: str | None = None
    runs: int = 1


def audit_records(directory: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(path, record) for each audit record in ``directory``, in name order; other files
    are skipped, and a directory that is not there holds none."""
    try:
        entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except FileNotFoundError:
        return
    for entry in entries:
        if entry.name.startswith(".") or not entry.name.endswith(".json"):
            continue
        try:
            with open(entry.path, encoding="utf-8") as stream:
                data = json.load(stream)
        except (OSError, ValueError):
            continue  # not a record of ours: records are written whole, never torn
        if isinstance(data, dict):
            yield entry.path, data


def record_key(data: Mapping[str, Any]) -> RecordKey | None:
    """The monitor key of one audit record (None for a record no monitor wrote)."""
    key = data.get(KEY_FIELD)
    trace = data.get("trace")
    if isinstance(key, str):
        return _run_of_file(key, data)
    if isinstance(trace, str) and trace.startswith("cloudwatch:"):
        return RecordKey(trace)  # a record from before keys were stored: its trace names it
    return None


def _run_of_file(key: str, data: Mapping[str, Any]) -> RecordKey:
    """A key ``<file key>#<trace id>`` whose record names its trace id and its file's runs."""
    trace_id, runs = data.get(TRACE_ID_FIELD), data.get(RUNS_FIELD)
    if not isinstance(trace_id, str) or isinstance(runs, bool) or not isinstance(runs, int):
        return RecordKey(key)
    suffix = f"#{trace_id}"
    if runs < 1 or not key.endswith(suffix) or len(key) == len(suffix):
        return RecordKey(key)
    return RecordKey(key, key[: -len(suffix)], runs)


def complete_files(keys: Iterable[RecordKey]) -> set[str]:
    """The file keys every one of whose runs has a record."""
    found: dict[str, set[str]] = {}
    wanted: dict[str, int] = {}
    for entry in keys:
        if entry.file_key is not None:
            found.setdefault(entry.file_key, set()).add(entry.key)
            wanted[entry.file_key] = entry.runs
    return {name for name, runs in found.items() if len(runs) >= wanted[name]}


def read_journal(path: Path) -> set[str]:
    """The keys whose alert was sent; a torn last line is cut off the file."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return set()
    complete = raw[: raw.rfind(b"\n") + 1]
    if len(complete) != len(raw):
        with open(path, "r+b") as stream:
            stream.truncate(len(complete))  # a kill mid-append; the next line starts clean
    alerted: set[str] = set()
    for number, line in enumerate(complete.decode("utf-8", "replace").splitlines(), 1):
        try:
            entry = json.loads(line)
        except ValueError:
            entry = None
        key = entry.get("alerted") if isinstance(entry, dict) else None
        if not isinstance(key, str):
            raise LedgerError(
                f"{path}: line {number} is not a monitor journal line; restore it or delete "
                "the file (alerts already sent may then be sent again)"
            )
        alerted.add(key)
    return alerted


class Ledger:
    """The keys done and alerted; with a directory, kept on disk and locked to one monitor."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self.done: set[str] = set()
        self.files_done: set[str] = set()  # file keys whose every run has a record
        self.alerted: set[str] = set()
        self.decided: set[str] = set()  # once keys that have a decision
        self.spans: dict[str, frozenset[str]] = {}  # key -> the span ids its decision covered
        self.spent: dict[str, float] = {}  # UTC day -> the judge's spend the records show
        self.largest = 0.0  # the dearest judged trace the records show
        self._journal: int | None = None
        if directory is None:
            return
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / JOURNAL_FILE
        self._journal = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o666)
        try:
            _lock(self._journal, directory)
            self.alerted = read_journal(path)
            keys = []
            for where, data in audit_records(directory):
                entry = record_key(data)
                if entry is not None:
                    keys.append(entry)
                    self._remember(entry.key, data, where)
            self.done = {entry.key for entry in keys}
            self.files_done = complete_files(keys)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Release the journal (and with it the lock)."""
        if self._journal is not None:
            os.close(self._journal)
            self._journal = None

    def finish(
        self,
        key: str,
        record: Mapping[str, Any],
        stem: str,
        alert: Callable[[], None] | None = None,
    ) -> None:
        """Alert (once per key), then write the record that marks ``key`` done."""
        if alert is not None and key not in self.alerted:
            alert()
            self._mark_alerted(key, record)
        if self.directory is not None:
            write_audit_record({**record, KEY_FIELD: key}, self.directory, stem)
        self.done.add(key)
        self._remember(key, record, None)

    def _remember(self, key: str, record: Mapping[str, Any], where: str | None) -> None:
        """Note a record's once key and covered spans; from the directory (``where``), also
        its judge spend, which the budget resumes from (a damaged decision: InputError)."""
        once, spans = record.get(ONCE_FIELD), record.get(SPANS_FIELD)
        if isinstance(once, str):
            self.decided.add(once)
        if isinstance(spans, list):
            self.spans[key] = frozenset(str(span) for span in spans)
        if where is None or DECISION_FIELD not in record:
            return
        decision = Decision.from_dict(record[DECISION_FIELD], where)
        if decision.cost:
            day = budget_day(decision.at)
            self.spent[day] = self.spent.get(day, 0.0) + decision.cost
            self.largest = max(self.largest, decision.cost)

    def _mark_alerted(self, key: str, record: Mapping[str, Any]) -> None:
        self.alerted.add(key)
        if self._journal is None:
            return
        verdict = record.get("verdict")
        status = verdict.get("status") if isinstance(verdict, Mapping) else None
        line = {"alerted": key, "trace": record.get("trace"), "status": status}
        # One write() of one line: a kill lands before it or after it, so the journal holds
        # each alert exactly once, whatever happened to the process around it.
        os.write(self._journal, (json.dumps(line, sort_keys=True) + "\n").encode("utf-8"))


def _lock(descriptor: int, directory: Path) -> None:
    """Hold an exclusive lock for this session; the kernel drops it when the process dies."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows has no flock; one monitor per directory
        return
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise LedgerError(
            f"{directory}: another canon contract monitor is writing here; give each monitor "
            "its own --output-dir"
        ) from None
