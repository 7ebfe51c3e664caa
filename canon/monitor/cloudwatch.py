"""Monitoring a CloudWatch Logs group that holds OpenTelemetry spans.

CloudWatch Transaction Search (and the ADOT collector) writes one span per log event, as
JSON, to the ``aws/spans`` group; other groups holding span JSON work the same way. The
monitor polls the group, groups spans by trace id, and validates a trace once it is
*complete*: its root span (no parent) has arrived and no new span came for it for the
settle window and a whole poll (a trace whose root lives in another service: three
quiet polls). Spans arrive late and out of order (a root span is stamped with its start
but exported last), so every read looks back by the look-back window from where the
last one resumed, and spans are de-duplicated by event id. Each trace is validated once:
its audit record carries its trace id and is the durable "seen" mark (see
``canon.monitor.ledger``), so a restart, or a kill, neither skips nor repeats a trace;
the state file only says where to resume reading. ``boto3`` is imported only here, only
when the monitor starts.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from canon.errors import CanonError, InputError
from canon.gates.contracts.audit import AuditRecord, create_audit_record
from canon.gates.contracts.execution import DataSource
from canon.gates.contracts.model import Contract
from canon.gates.contracts.otel.shapes import sdk_fields
from canon.gates.contracts.validate import validate
from canon.monitor.judging import OnJudged, OnlineJudge, decide_fields, late_record, together
from canon.monitor.ledger import SPANS_FIELD, Ledger
from canon.monitor.stats import MonitorStats
from canon.project.store import read_json, write_json_atomic

DEFAULT_LOG_GROUP = "aws/spans"
INSTALL_LINE = 'pip install "canon-testing[cloudwatch]"'
STATE_FILE = ".canon-cloudwatch-state.json"
# A trace whose root span was never exported (its parent lives in another service) is
# complete once this many polls in a row brought nothing new for it.
ORPHAN_QUIET_POLLS = 3
DEFAULT_SETTLE = 30.0  # seconds without a new span before a trace is complete
DEFAULT_LOOK_BACK = 600.0  # seconds each read reaches back before where it resumes


class CloudWatchError(InputError):
    """boto3 is missing, or CloudWatch refused a request (no such group, no credentials)."""


def logs_client(region: str | None = None) -> Any:
    """A boto3 CloudWatch Logs client (``AWS_ENDPOINT_URL`` and profiles apply as usual).

    The region is ``region``, else ``AWS_REGION`` (which the AWS CLI and the other SDKs
    read first and botocore ignores), else botocore's own: ``AWS_DEFAULT_REGION`` or the
    profile's. With none of them it is an error naming how to give one."""
    try:
        import boto3  # type: ignore[import-untyped]  # boto3 ships no type stubs
        from botocore.exceptions import (  # type: ignore[import-untyped]
            BotoCoreError,
            NoRegionError,
        )
    except ImportError:
        raise CloudWatchError(
            f"the CloudWatch monitor needs boto3, which is not installed; install it with: "
            f"{INSTALL_LINE}"
        ) from None
    try:
        return boto3.client("logs", region_name=region or os.environ.get("AWS_REGION") or None)
    except NoRegionError:
        raise CloudWatchError(
            "the CloudWatch monitor needs the log group's AWS region: pass --region REGION, "
            "or set AWS_REGION (or AWS_DEFAULT_REGION, or region in your AWS profile)"
        ) from None
    except BotoCoreError as exc:  # the AWS configuration itself: a profile that is not there
        raise CloudWatchError(
            f"the CloudWatch monitor cannot use the AWS configuration: {exc}"
        ) from None


@dataclass(slots=True)
class _Trace:
    spans: list[dict[str, Any]] = field(default_factory=list)
    span_ids: set[str] = field(default_factory=set)
    first_ms: int = 0
    has_root: bool = False
    quiet_polls: int = 0
    last_new: float = 0.0  # the monitor's clock when its newest span came


def _event_id(event: Mapping[str, Any]) -> str:
    """CloudWatch's event id; without one, the event's stream, time and text stand in."""
    given = event.get("eventId")
    if given:
        return str(given)
    text = str(event.get("message", "")).encode("utf-8", "replace")
    stream = event.get("logStreamName", "")
    return f"{stream}:{event.get('timestamp')}:{hashlib.sha256(text).hexdigest()}"


@dataclass(slots=True)
class _Watch:
    """What one monitoring session knows: traces being assembled, and what is done."""

    contract: Contract
    log_group: str
    ledger: Ledger
    metadata: Mapping[str, Any] | None
    source_map: Mapping[str, DataSource] | None
    on_violation: Callable[[AuditRecord], None] | None
    settle: float
    judge: OnlineJudge | None = None
    on_judged: OnJudged | None = None
    resume_ms: int = 0
    # event id -> its timestamp; events before the read window are forgotten
    seen_events: dict[str, int] = field(default_factory=dict)
    open: dict[str, _Trace] = field(default_factory=dict)
    counts: dict[str, int] = field(
        default_factory=lambda: {"pass": 0, "fail": 0, "warn": 0, "error": 0, "late": 0}
    )

    def key(self, trace_id: str) -> str:
        """The trace's name in audit records and in the ledger."""
        return f"cloudwatch:{self.log_group}/{trace_id}"

    def take(self, event: Mapping[str, Any], now: float) -> str | None:
        """File one log event under its trace; the trace id, or None if it adds nothing."""
        event_id = _event_id(event)
        if event_id in self.seen_events:
            return None  # read before: the look-back window overlaps the last read
        stamp = event.get("timestamp")
        stamp = stamp if isinstance(stamp, int) else 0
        self.seen_events[event_id] = stamp
        try:
            span = json.loads(str(event.get("message", "")))
        except ValueError:
            span = None
        # ids at the top (ADOT, OTLP JSON) or under "context" (the OTel SDKs' own JSON)
        raw_trace, raw_span, parent, _, _ = sdk_fields(span) if isinstance(span, dict) else [""] * 5
        trace_id = raw_trace if isinstance(raw_trace, str) else ""
        if not trace_id:
            self.counts["error"] += 1  # not a span: counted, never validated
            return None
        span_id = str(raw_span or "")
        if self.key(trace_id) in self.ledger.done:
            self._late(trace_id, span_id or event_id)
            return None
        assert isinstance(span, dict)
        trace = self.open.setdefault(trace_id, _Trace(first_ms=stamp))
        if span_id and span_id in trace.span_ids:
            return None  # the exporter delivered this span twice
        if span_id:
            trace.span_ids.add(span_id)
        trace.spans.append(span)
        trace.first_ms = min(trace.first_ms, stamp) if trace.first_ms else stamp
        trace.quiet_polls = 0
        trace.last_new = now
        if not parent:
            trace.has_root = True
        return trace_id

    def _late(self, trace_id: str, span: str) -> None:
        """With a judge, record a span that came after its trace was decided as ``late``
        (once per span: a span the decision covered, read again after a restart, is not)."""
        if self.judge is None:
            return
        decided = self.key(trace_id)
        late_key = f"{decided}#late:{span}"
        if span in self.ledger.spans.get(decided, ()) or late_key in self.ledger.done:
            return
        cause = f"span {span} came after the trace was decided"
        record = late_record(decided, trace_id, self.judge.clock(), cause)
        self.counts["late"] += 1
        self.ledger.finish(late_key, record, f"{trace_id}-late")

    def finish_quiet_traces(self, touched: set[str], now: float) -> None:
        """Validate every open trace that is complete after this poll."""
        for trace_id in sorted(self.open):
            trace = self.open[trace_id]
            if trace_id in touched:
                continue
            trace.quiet_polls += 1
            needed = 1 if trace.has_root else ORPHAN_QUIET_POLLS
            if trace.quiet_polls >= needed and now - trace.last_new >= self.settle:
                self._validate(trace_id, self.open.pop(trace_id))

    def _validate(self, trace_id: str, trace: _Trace) -> None:
        from canon.gates.contracts.otel import normalize_trace

        source = self.key(trace_id)
        try:
            execution = normalize_trace(
                trace.spans, metadata=dict(self.metadata or {}) or None, source=source
            )
        except CanonError as exc:
            self.counts["error"] += 1
            error = {"trace": source, "verdict": {"status": "error"}, "error": str(exc)}
            self.ledger.finish(source, error, trace_id)
            return
        mapping = self.contract.source_map if self.source_map is None else self.source_map
        verdict = validate(self.contract, execution, source_map=mapping)
        record = create_audit_record(verdict, execution, source_map=mapping, trace=source)
        self.counts[verdict.status] += 1
        hook = self.on_violation
        alert = None if hook is None or not verdict.violations else (lambda: hook(record))
        decided, send = decide_fields(self.judge, self.contract, execution, verdict, self.on_judged)
        stored = {**record.to_dict(), **decided}
        if decided:  # the spans it covered: one read again after a restart is not late
            stored[SPANS_FIELD] = sorted(trace.span_ids)
        self.ledger.finish(source, stored, trace_id, together(alert, send))

    def next_start_ms(self, newest_ms: int) -> int:
        """Where reading resumes: the oldest open trace, else the newest event seen."""
        starts = [trace.first_ms for trace in self.open.values() if trace.first_ms]
        return min(starts) if starts else max(newest_ms, self.resume_ms)

    def read_start_ms(self, newest_ms: int, look_back_ms: int) -> int:
        """Where the next read starts (the look-back before the resume point); forget older."""
        start = max(0, self.next_start_ms(newest_ms) - look_back_ms)
        self.seen_events = {k: v for k, v in self.seen_events.items() if v >= start}
        return start

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
    """The trace ids an older state file listed (older versions kept them) and the resume."""
    if path is None or not path.is_file():
        return set(), 0
    state = read_json(path, "CloudWatch monitor state")
    if not isinstance(state, dict) or state.get("log_group") != log_group:
        raise CloudWatchError(
            f"{path}: not the state of a monitor of log group {log_group!r}; use another "
            "--output-dir or delete the file to start over"
        )
    validated = state.get("validated", [])
    resume = state.get("resume_ms")
    if not isinstance(validated, list) or not isinstance(resume, int) or resume < 0:
        raise CloudWatchError(f"{path}: malformed monitor state; delete it to start over")
    return {str(item) for item in validated}, resume


def _save_state(path: Path | None, watch: _Watch, newest_ms: int) -> None:
    if path is None:
        return
    state = {"log_group": watch.log_group, "resume_ms": watch.next_start_ms(newest_ms)}
    write_json_atomic(path, state)


def monitor_cloudwatch(
    contract: Contract,
    log_group: str = DEFAULT_LOG_GROUP,
    *,
    region: str | None = None,
    output_dir: str | Path | None = None,
    state_file: str | Path | None = None,
    poll_interval: float = 5.0,
    settle: float = DEFAULT_SETTLE,
    look_back: float = DEFAULT_LOOK_BACK,
    metadata: Mapping[str, Any] | None = None,
    source_map: Mapping[str, DataSource] | None = None,
    on_violation: Callable[[AuditRecord], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    max_polls: int | None = None,
    stop: Callable[[], bool] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    client: Any = None,
    judge: OnlineJudge | None = None,
    on_judged: OnJudged | None = None,
) -> MonitorStats:
    """Validate each completed trace in a CloudWatch log group of spans, once.

    ``client`` is a boto3 ``logs`` client (one is made for ``region`` when not given). A
    trace is complete once no span came for it for ``settle`` seconds (by ``clock``); each
    read reaches ``look_back`` seconds before where the last one resumed, for spans that
    are delivered late or stamped early. With ``output_dir``, the audit records there are
    the memory across restarts and kills, and ``on_violation`` fires once per trace (a kill
    in the instant after an alert may repeat that one alert); the state file (default:
    ``.canon-cloudwatch-state.json`` in ``output_dir``) says where to resume. ``on_start``
    gets the number of traces that already have a record, before the first poll. With
    ``judge``, each trace is also decided (``canon.monitor.judging``) into its record and
    ``on_judged`` gets each judged one, once, as an alert is sent. Stops after
    ``max_polls`` polls, when ``stop()`` returns True, or on Ctrl-C; returns the
    statistics.
    """
    directory = None if output_dir is None else Path(output_dir)
    state_path = Path(state_file) if state_file is not None else None
    if state_path is None and directory is not None:
        state_path = directory / STATE_FILE
    listed, resume_ms = _load_state(state_path, log_group)
    logs = client if client is not None else logs_client(region)
    ledger = Ledger(directory)
    watch = _Watch(
        contract, log_group, ledger, metadata, source_map, on_violation, settle, judge, on_judged
    )
    ledger.done |= {watch.key(trace_id) for trace_id in listed}
    if judge is not None:
        judge.resume(ledger.spent, ledger.largest)  # a restart does not spend the day twice
    watch.resume_ms = resume_ms
    look_back_ms = int(look_back * 1000)
    newest = resume_ms
    polls = 0
    try:
        if on_start is not None:
            on_start(len(ledger.done))  # resumed: this many traces already have a record
        while True:
            polls += 1
            now = clock()  # one moment per poll: the spans it brings arrived "now"
            touched: set[str] = set()
            for event in _events(logs, log_group, watch.read_start_ms(newest, look_back_ms)):
                stamp = event.get("timestamp")
                if isinstance(stamp, int):
                    newest = max(newest, stamp)
                trace_id = watch.take(event, now)
                if trace_id is not None:
                    touched.add(trace_id)
            watch.finish_quiet_traces(touched, now)
            _save_state(state_path, watch, newest)
            if (max_polls is not None and polls >= max_polls) or (stop is not None and stop()):
                return watch.stats(polls, interrupted=False)
            sleep(poll_interval)
    except KeyboardInterrupt:
        _save_state(state_path, watch, newest)
        return watch.stats(polls, interrupted=True)
    finally:
        ledger.close()
