"""Monitoring a CloudWatch Logs group that holds OpenTelemetry spans.

CloudWatch Transaction Search (and the ADOT collector) writes one span per log event, as
JSON, to the ``aws/spans`` group; other groups holding span JSON work the same way. The
monitor polls the group, groups spans by trace id, and validates a trace once it is
*complete*: its root span (no parent) has arrived and a whole poll brought no new span
for it (a trace whose root lives in another service: three quiet polls). Each trace is
validated once: the ids already validated and where to resume reading are kept in a
state file next to the audit records, so a restart neither skips nor repeats a trace.
``boto3`` is imported only here, only when the monitor starts.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from canon.errors import CanonError, InputError
from canon.gates.contracts.audit import AuditRecord, create_audit_record
from canon.gates.contracts.execution import DataSource
from canon.gates.contracts.model import Contract
from canon.gates.contracts.validate import validate
from canon.monitor.stats import MonitorStats
from canon.project.contract_files import write_audit_record
from canon.project.store import read_json, write_json_atomic

DEFAULT_LOG_GROUP = "aws/spans"
INSTALL_LINE = 'pip install "canon-testing[cloudwatch]"'
STATE_FILE = ".canon-cloudwatch-state.json"
# A trace whose root span was never exported (its parent lives in another service) is
# complete once this many polls in a row brought nothing new for it.
ORPHAN_QUIET_POLLS = 3


class CloudWatchError(InputError):
    """boto3 is missing, or CloudWatch refused a request (no such group, no credentials)."""


def logs_client(region: str | None = None) -> Any:
    """A boto3 CloudWatch Logs client (``AWS_ENDPOINT_URL`` and profiles apply as usual)."""
    try:
        import boto3  # type: ignore[import-untyped]  # boto3 ships no type stubs
    except ImportError:
        raise CloudWatchError(
            f"the CloudWatch monitor needs boto3, which is not installed; install it with: "
            f"{INSTALL_LINE}"
        ) from None
    return boto3.client("logs", region_name=region)


@dataclass(slots=True)
class _Trace:
    spans: list[dict[str, Any]] = field(default_factory=list)
    first_ms: int = 0
    has_root: bool = False
    quiet_polls: int = 0


@dataclass(slots=True)
class _Watch:
    """What one monitoring session knows: traces being assembled, and what is done."""

    contract: Contract
    log_group: str
    output_dir: Path | None
    metadata: Mapping[str, Any] | None
    source_map: Mapping[str, DataSource] | None
    on_violation: Callable[[AuditRecord], None] | None
    validated: set[str] = field(default_factory=set)
    resume_ms: int = 0
    seen_events: set[str] = field(default_factory=set)
    open: dict[str, _Trace] = field(default_factory=dict)
    counts: dict[str, int] = field(
        default_factory=lambda: {"pass": 0, "fail": 0, "warn": 0, "error": 0}
    )

    def take(self, event: Mapping[str, Any]) -> str | None:
        """File one log event under its trace; the trace id, or None if it adds nothing."""
        event_id = str(event.get("eventId", ""))
        if event_id and event_id in self.seen_events:
            return None
        self.seen_events.add(event_id)
        stamp = event.get("timestamp")
        stamp = stamp if isinstance(stamp, int) else 0
        try:
            span = json.loads(str(event.get("message", "")))
        except ValueError:
            span = None
        if not isinstance(span, dict):
            self.counts["error"] += 1  # not a span: counted, never validated
            return None
        trace_id = str(span.get("traceId") or span.get("trace_id") or "")
        if not trace_id or trace_id in self.validated:
            return None
        trace = self.open.setdefault(trace_id, _Trace(first_ms=stamp))
        trace.spans.append(span)
        trace.first_ms = min(trace.first_ms, stamp) if trace.first_ms else stamp
        trace.quiet_polls = 0
        if not (span.get("parentSpanId") or span.get("parent_span_id")):
            trace.has_root = True
        return trace_id

    def finish_quiet_traces(self, touched: set[str]) -> None:
        """Validate every open trace that is complete after this poll."""
        for trace_id in sorted(self.open):
            trace = self.open[trace_id]
            if trace_id in touched:
                continue
            trace.quiet_polls += 1
            if trace.has_root or trace.quiet_polls >= ORPHAN_QUIET_POLLS:
                self._validate(trace_id, self.open.pop(trace_id))

    def _validate(self, trace_id: str, trace: _Trace) -> None:
        from canon.gates.contracts.otel import normalize_trace

        source = f"cloudwatch:{self.log_group}/{trace_id}"
        self.validated.add(trace_id)
        try:
            execution = normalize_trace(
                trace.spans, metadata=dict(self.metadata or {}) or None, source=source
            )
        except CanonError as exc:
            self.counts["error"] += 1
            if self.output_dir is not None:
                error = {"trace": source, "verdict": {"status": "error"}, "error": str(exc)}
                write_audit_record(error, self.output_dir, trace_id)
            return
        mapping = self.contract.source_map if self.source_map is None else self.source_map
        verdict = validate(self.contract, execution, source_map=mapping)
        record = create_audit_record(verdict, execution, source_map=mapping, trace=source)
        self.counts[verdict.status] += 1
        if self.output_dir is not None:
            write_audit_record(record, self.output_dir, trace_id)
        if verdict.violations and self.on_violation is not None:
            self.on_violation(record)

    def next_start_ms(self, newest_ms: int) -> int:
        """Where the next read starts: the oldest open trace, else the newest event seen."""
        starts = [trace.first_ms for trace in self.open.values() if trace.first_ms]
        return min(starts) if starts else max(newest_ms, self.resume_ms)

    def stats(self, polls: int, interrupted: bool) -> MonitorStats:
        return MonitorStats.from_counts(
            self.counts, polls=polls, pending=len(self.open), interrupted=interrupted
        )


def _events(client: Any, log_group: str, start_ms: int) -> Iterator[Mapping[str, Any]]:
    """Every log event of the group from ``start_ms`` on, page by page."""
    request: dict[str, Any] = {"logGroupName": log_group, "startTime": start_ms}
    while True:
        try:
            page = client.filter_log_events(**request)
        except Exception as exc:  # botocore's errors: no such group, no credentials, ...
            raise CloudWatchError(
                f"cloudwatch:{log_group}: reading the log group failed: {exc}; check the "
                "group name, the region (--region) and the AWS credentials"
            ) from exc
        yield from page.get("events", ())
        token = page.get("nextToken")
        if not token or token == request.get("nextToken"):
            return
        request["nextToken"] = token


def _load_state(path: Path | None, log_group: str) -> tuple[set[str], int]:
    if path is None or not path.is_file():
        return set(), 0
    state = read_json(path, "CloudWatch monitor state")
    if not isinstance(state, dict) or state.get("log_group") != log_group:
        raise CloudWatchError(
            f"{path}: not the state of a monitor of log group {log_group!r}; use another "
            "--output-dir or delete the file to start over"
        )
    validated = state.get("validated")
    resume = state.get("resume_ms")
    if not isinstance(validated, list) or not isinstance(resume, int):
        raise CloudWatchError(f"{path}: malformed monitor state; delete it to start over")
    return {str(item) for item in validated}, resume


def _save_state(path: Path | None, watch: _Watch, newest_ms: int) -> None:
    if path is None:
        return
    state = {
        "log_group": watch.log_group,
        "resume_ms": watch.next_start_ms(newest_ms),
        "validated": sorted(watch.validated),
    }
    write_json_atomic(path, state)


def monitor_cloudwatch(
    contract: Contract,
    log_group: str = DEFAULT_LOG_GROUP,
    *,
    region: str | None = None,
    output_dir: str | Path | None = None,
    state_file: str | Path | None = None,
    poll_interval: float = 5.0,
    metadata: Mapping[str, Any] | None = None,
    source_map: Mapping[str, DataSource] | None = None,
    on_violation: Callable[[AuditRecord], None] | None = None,
    max_polls: int | None = None,
    stop: Callable[[], bool] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    client: Any = None,
) -> MonitorStats:
    """Validate each completed trace in a CloudWatch log group of spans, once.

    ``client`` is a boto3 ``logs`` client (one is made for ``region`` when not given). The
    state file (default: ``.canon-cloudwatch-state.json`` in ``output_dir``) remembers the
    traces already validated across restarts. Stops after ``max_polls`` polls, when
    ``stop()`` returns True, or on Ctrl-C, and returns the statistics.
    """
    directory = None if output_dir is None else Path(output_dir)
    state_path = Path(state_file) if state_file is not None else None
    if state_path is None and directory is not None:
        state_path = directory / STATE_FILE
    validated, resume_ms = _load_state(state_path, log_group)
    logs = client if client is not None else logs_client(region)
    watch = _Watch(contract, log_group, directory, metadata, source_map, on_violation)
    watch.validated, watch.resume_ms = validated, resume_ms
    newest = resume_ms
    polls = 0
    try:
        while True:
            polls += 1
            touched: set[str] = set()
            for event in _events(logs, log_group, watch.next_start_ms(newest)):
                stamp = event.get("timestamp")
                if isinstance(stamp, int):
                    newest = max(newest, stamp)
                trace_id = watch.take(event)
                if trace_id is not None:
                    touched.add(trace_id)
            watch.finish_quiet_traces(touched)
            _save_state(state_path, watch, newest)
            if (max_polls is not None and polls >= max_polls) or (stop is not None and stop()):
                return watch.stats(polls, interrupted=False)
            sleep(poll_interval)
    except KeyboardInterrupt:
        _save_state(state_path, watch, newest)
        return watch.stats(polls, interrupted=True)
