"""Watching a directory and validating every trace that lands in it."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from canon.errors import CanonError
from canon.gates.contracts.audit import AuditRecord, create_audit_record
from canon.gates.contracts.execution import DataSource
from canon.gates.contracts.model import Contract
from canon.gates.contracts.validate import validate
from canon.monitor.stats import MonitorStats
from canon.project.contract_files import read_trace, write_audit_record

TRACE_PATTERNS = ("*.json", "*.jsonl")


@dataclass(slots=True)
class _Session:
    contract: Contract
    output_dir: Path | None
    metadata: Mapping[str, Any] | None
    source_map: Mapping[str, DataSource] | None
    on_violation: Callable[[AuditRecord], None] | None
    done: set[Path] = field(default_factory=set)
    # path -> (size, mtime) when its last read failed; retried once it changes
    failed: dict[Path, tuple[int, int]] = field(default_factory=dict)
    counts: dict[str, int] = field(
        default_factory=lambda: {"pass": 0, "fail": 0, "warn": 0, "error": 0}
    )

    def visit(self, path: Path) -> None:
        try:
            status = path.stat()
        except OSError:
            return  # vanished between listing and reading
        signature = (status.st_size, status.st_mtime_ns)
        previous = self.failed.get(path)
        try:
            execution = read_trace(path, metadata=self.metadata)
        except CanonError as exc:
            if previous is None or previous != signature:
                # Possibly still being written: try again on the next poll.
                self.failed[path] = signature
                return
            self._give_up(path, str(exc))
            return
        self.failed.pop(path, None)
        self.done.add(path)
        mapping = self.contract.source_map if self.source_map is None else self.source_map
        verdict = validate(self.contract, execution, source_map=mapping)
        record = create_audit_record(verdict, execution, source_map=mapping, trace=str(path))
        self.counts[verdict.status] += 1
        if self.output_dir is not None:
            write_audit_record(record, self.output_dir, path.stem)
        if verdict.violations and self.on_violation is not None:
            self.on_violation(record)

    def _give_up(self, path: Path, message: str) -> None:
        self.failed.pop(path, None)
        self.done.add(path)
        self.counts["error"] += 1
        if self.output_dir is not None:
            error = {"trace": str(path), "verdict": {"status": "error"}, "error": message}
            write_audit_record(error, self.output_dir, path.stem)

    def stats(self, polls: int, interrupted: bool) -> MonitorStats:
        return MonitorStats.from_counts(
            self.counts, polls=polls, pending=len(self.failed), interrupted=interrupted
        )


def monitor_directory(
    contract: Contract,
    watch_dir: str | Path,
    *,
    output_dir: str | Path | None = None,
    poll_interval: float = 5.0,
    metadata: Mapping[str, Any] | None = None,
    source_map: Mapping[str, DataSource] | None = None,
    on_violation: Callable[[AuditRecord], None] | None = None,
    max_polls: int | None = None,
    stop: Callable[[], bool] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> MonitorStats:
    """Validate the traces already in ``watch_dir`` and each one that arrives later.

    A file that cannot be read as a trace is retried on the next poll if it changed in
    between (it was still being written); one that fails twice unchanged is an error.
    ``on_violation`` receives every FAIL or WARN record. Stops after ``max_polls`` polls,
    when ``stop()`` returns True, or on Ctrl-C, and returns the statistics.
    """
    directory = Path(watch_dir)
    session = _Session(
        contract,
        None if output_dir is None else Path(output_dir),
        metadata,
        source_map,
        on_violation,
    )
    polls = 0
    try:
        while True:
            polls += 1
            found = {path for pattern in TRACE_PATTERNS for path in directory.glob(pattern)}
            for path in sorted(found - session.done):
                if path.is_file():
                    session.visit(path)
            if (max_polls is not None and polls >= max_polls) or (stop is not None and stop()):
                return session.stats(polls, interrupted=False)
            sleep(poll_interval)
    except KeyboardInterrupt:
        return session.stats(polls, interrupted=True)
