"""Watching a directory and validating every run in every trace file that lands in it, once.

A file is read only when it has *settled*: its modification time is at least the settle
window old, so a file still being written is pending, not an error. A file is known by
its name and the SHA-256 of its bytes, and each run in it (a file or session export may
hold several, see ``canon.gates.contracts.otel.runs``) by that key and its trace id:
``file:<name>#sha256:<digest>#<trace id>``. The records in the output directory carry
those keys (see ``canon.monitor.ledger``), so a restart skips what has a record, reads
what has none, also between two runs of one file, and a file rewritten with new content
counts anew. A record keyed by the file alone (an unreadable file, or a record written
before runs had keys) stands for the whole file. A settled file that is no trace gets one
error record; it is read again only if it changes.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from canon.errors import CanonError, InputError
from canon.gates.contracts.audit import AuditRecord, create_audit_record
from canon.gates.contracts.execution import DataSource, Execution
from canon.gates.contracts.model import Contract
from canon.gates.contracts.validate import validate
from canon.monitor.judging import OnJudged, OnlineJudge, decide_fields, late_record, together
from canon.monitor.ledger import RUNS_FIELD, TRACE_ID_FIELD, Ledger
from canon.monitor.stats import MonitorStats
from canon.project.contract_files import read_trace_runs, run_stem

TRACE_PATTERNS = ("*.json", "*.jsonl")
DEFAULT_SETTLE = 2.0  # seconds a file must stay unchanged before it is read

Signature = tuple[int, int]  # (size, mtime in ns): a change in either means "still written"


def _signature(path: Path) -> Signature | None:
    try:
        status = path.stat()
    except OSError:
        return None  # vanished between listing and reading
    return status.st_size, status.st_mtime_ns


def _digest(path: Path) -> str:
    """The SHA-256 of the file's bytes; raises OSError when they cannot be read."""
    hasher = hashlib.sha256()
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            hasher.update(chunk)
    return hasher.hexdigest()


@dataclass(slots=True)
class _Session:
    contract: Contract
    ledger: Ledger
    metadata: Mapping[str, Any] | None
    source_map: Mapping[str, DataSource] | None
    on_violation: Callable[[AuditRecord], None] | None
    on_unreadable: Callable[[Path, str], None] | None
    settle: float
    clock: Callable[[], float]
    judge: OnlineJudge | None = None
    on_judged: OnJudged | None = None
    # name -> the signature its key was computed for, and that key (the file is done)
    known: dict[str, tuple[Signature, str]] = field(default_factory=dict)
    pending: set[str] = field(default_factory=set)
    counts: dict[str, int] = field(
        default_factory=lambda: {"pass": 0, "fail": 0, "warn": 0, "error": 0, "late": 0}
    )

    def visit(self, path: Path) -> None:
        """Validate one file if it settled and has no record yet; else note it pending."""
        name = path.name
        self.pending.discard(name)
        signature = _signature(path)
        if signature is None:
            return
        cached = self.known.get(name)
        if cached is not None and cached[0] == signature:
            return  # done, unchanged since
        if self.clock() - signature[1] / 1e9 < self.settle:
            self.pending.add(name)  # written within the settle window: maybe not finished
            return
        try:
            digest = _digest(path)
        except OSError as exc:  # no record (it has no key): reported again only if it changes
            self.known[name] = (signature, "")
            self._unreadable(path, f"{path}: cannot be read: {exc.strerror or exc}")
            return
        key = f"file:{name}#sha256:{digest}"
        if key in self.ledger.done or key in self.ledger.files_done:
            self.known[name] = (signature, key)
            return
        try:
            runs = read_trace_runs(path, metadata=self.metadata)
            problem = None
        except CanonError as exc:
            runs, problem = [], str(exc)
        if _signature(path) != signature:
            self.pending.add(name)  # it changed while being read: read it once it settles
            return
        self.known[name] = (signature, key)
        if problem is not None:
            self._unreadable(path, problem)
            error = {"trace": str(path), "verdict": {"status": "error"}, "error": problem}
            self.ledger.finish(key, error, path.stem)
            return
        for trace_id, execution in _run_ids(runs):
            run_key = f"{key}#{trace_id}"
            if run_key not in self.ledger.done:  # a kill may have come between two runs
                stem = path.stem if len(runs) == 1 else run_stem(path.stem, trace_id)
                self._validate(path, execution, run_key, stem, len(runs), trace_id)
        self.ledger.files_done.add(key)

    def _unreadable(self, path: Path, problem: str) -> None:
        self.counts["error"] += 1
        if self.on_unreadable is not None:
            self.on_unreadable(path, problem)

    def _validate(
        self, path: Path, execution: Execution, key: str, stem: str, runs: int, trace_id: str
    ) -> None:
        judge = self.judge
        if judge is not None and judge.key(execution.execution_id, self.contract) in (
            self.ledger.decided
        ):  # spans of a trace decided from an earlier file: late, never judged twice
            cause = f"{path.name} came after the trace was decided"
            late = late_record(str(path), execution.execution_id, self.clock(), cause)
            self.counts["late"] += 1
            self.ledger.finish(key, {**late, RUNS_FIELD: runs, TRACE_ID_FIELD: trace_id}, stem)
            return
        mapping = self.contract.source_map if self.source_map is None else self.source_map
        verdict = validate(self.contract, execution, source_map=mapping)
        record = create_audit_record(verdict, execution, source_map=mapping, trace=str(path))
        self.counts[verdict.status] += 1
        hook = self.on_violation
        alert = None if hook is None or not verdict.violations else (lambda: hook(record))
        decided, send = decide_fields(judge, self.contract, execution, verdict, self.on_judged)
        stored = {**record.to_dict(), TRACE_ID_FIELD: trace_id, RUNS_FIELD: runs, **decided}
        self.ledger.finish(key, stored, stem, together(alert, send))

    def stats(self, polls: int, interrupted: bool) -> MonitorStats:
        return MonitorStats.from_counts(
            self.counts, polls=polls, pending=len(self.pending), interrupted=interrupted
        )


def _run_ids(runs: list[Execution]) -> list[tuple[str, Execution]]:
    """Each run with the id its key ends in: its trace id, made unique within the file."""
    seen: dict[str, int] = {}
    named: list[tuple[str, Execution]] = []
    for execution in runs:
        trace_id = execution.execution_id
        seen[trace_id] = seen.get(trace_id, 0) + 1
        # distinct runs have distinct trace ids; a repeat would make two runs one key
        named.append(
            (trace_id if seen[trace_id] == 1 else f"{trace_id}~{seen[trace_id]}", execution)
        )
    return named


def monitor_directory(
    contract: Contract,
    watch_dir: str | Path,
    *,
    output_dir: str | Path | None = None,
    poll_interval: float = 5.0,
    settle: float = DEFAULT_SETTLE,
    metadata: Mapping[str, Any] | None = None,
    source_map: Mapping[str, DataSource] | None = None,
    on_violation: Callable[[AuditRecord], None] | None = None,
    on_unreadable: Callable[[Path, str], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    max_polls: int | None = None,
    stop: Callable[[], bool] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.time,
    judge: OnlineJudge | None = None,
    on_judged: OnJudged | None = None,
) -> MonitorStats:
    """Validate each run of each trace file in ``watch_dir`` once: those present and those
    that arrive (a file holding several runs gets one verdict and one record per run).

    A file is read once unchanged for ``settle`` seconds (by ``clock``, wall time, against
    its modification time). With ``output_dir``, the records there are the memory: across
    restarts, and across a kill, no trace is validated twice or skipped, and
    ``on_violation`` (called with each FAIL or WARN record) fires once per run (a kill in
    the instant after an alert may repeat that one alert). A settled file that cannot be
    read or is no trace counts as unreadable (``errors``) and ``on_unreadable`` gets its
    path and the reason, once per version of the file. With ``judge``, each run is also
    decided (sampled, held to the budget, judged: ``canon.monitor.judging``), its decision
    goes into its record, and ``on_judged`` gets each judged one, once, as an alert is sent.
    ``on_start`` gets the number of
    traces that already have a record, before the first poll. Stops after ``max_polls``
    polls, when ``stop()`` returns True, or on Ctrl-C, and returns the statistics.
    """
    directory = Path(watch_dir)
    if output_dir is not None and os.path.realpath(output_dir) == os.path.realpath(directory):
        # its own records would land among the traces and be read as traces, without end
        raise InputError(
            f"{output_dir}: the audit records cannot go into the watched directory; "
            "give another --output-dir"
        )
    ledger = Ledger(None if output_dir is None else Path(output_dir))
    if judge is not None:
        judge.resume(ledger.spent, ledger.largest)  # a restart does not spend the day twice
    session = _Session(
        contract,
        ledger,
        metadata,
        source_map,
        on_violation,
        on_unreadable,
        settle,
        clock,
        judge,
        on_judged,
    )
    polls = 0
    try:
        if on_start is not None:
            on_start(len(ledger.done))  # resumed: this many traces already have a record
        while True:
            polls += 1
            found = {path for pattern in TRACE_PATTERNS for path in directory.glob(pattern)}
            session.pending &= {path.name for path in found}
            for path in sorted(found):
                if path.is_file():
                    session.visit(path)
            if (max_polls is not None and polls >= max_polls) or (stop is not None and stop()):
                return session.stats(polls, interrupted=False)
            sleep(poll_interval)
    except KeyboardInterrupt:
        return session.stats(polls, interrupted=True)
    finally:
        ledger.close()
