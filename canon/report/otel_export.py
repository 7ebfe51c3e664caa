"""The OpenTelemetry edge: send evaluation events as OTLP/HTTP log records.

The OpenTelemetry SDK is the optional ``otel`` extra; this is the one module that sends
through it (``canon.check.capture`` records a test's spans through it), always importing
it inside a function, so ``canon`` works without it. ``otel_events`` makes the
values; this module sends them, for both interfaces (the commands' ``--otel`` and the
pytest plugin's ``--canon-otel``), so it sits below them. The endpoint, headers, timeout
and service name come from the standard ``OTEL_*`` variables, read by the SDK.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

from canon.core.artifact import Artifact
from canon.errors import InputError, TelemetrySetupError
from canon.gates.contracts.execution import Execution
from canon.report.otel_events import EvaluationEvent, TraceLink, trace_link

INSTALL_LINE = 'pip install "canon-testing[otel]"'
DEFAULT_SERVICE_NAME = "canon"
SUPPORTED_PROTOCOL = "http/protobuf"
_DEFAULT_ENDPOINT = "http://localhost:4318"
_LOGS_PATH = "/v1/logs"
# More than the SDK's default queue (2,048) is dropped silently; a run may make more events.
_BATCH_SIZE = 512
_OS_REASON = re.compile(r"\[Errno -?\d+\] [^\"')(]+")


@dataclass(frozen=True, slots=True)
class ExportSummary:
    """What became of a run's events: how many the endpoint took, and why the rest did not."""

    endpoint: str
    total: int
    sent: int
    problem: str | None = None  # the exporter's own words about the first failure
    disabled: bool = False  # OTEL_SDK_DISABLED=true: nothing was sent on purpose

    @property
    def complete(self) -> bool:
        """Whether every event reached the endpoint (or sending was disabled on purpose)."""
        return self.disabled or self.sent == self.total


def canon_version() -> str:
    """Canon's installed version, the instrumentation scope's version on every event."""
    try:
        return metadata.version("canon-testing")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def check_telemetry(environ: Mapping[str, str] | None = None) -> str:
    """Refuse, before any judge call, a setup that could not send: the SDK is missing, the
    protocol is not OTLP/HTTP protobuf, or the endpoint is no http(s) URL. Returns the
    logs endpoint the events will go to."""
    env = os.environ if environ is None else environ
    for name in ("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        value = env.get(name, "").strip()
        if value:
            if value != SUPPORTED_PROTOCOL:
                raise TelemetrySetupError(
                    f"{name}={value!r} is not supported: canon sends OTLP over HTTP as "
                    f"protobuf; set {name}={SUPPORTED_PROTOCOL} or unset it"
                )
            break  # the signal's own variable wins over the general one
    endpoint = logs_endpoint(env)
    try:
        import opentelemetry.exporter.otlp.proto.http._log_exporter
        import opentelemetry.sdk._logs  # noqa: F401
    except ImportError as exc:
        raise TelemetrySetupError(
            f"--otel needs the OpenTelemetry SDK and its OTLP exporter ({exc.name} is not "
            f"installed); run: {INSTALL_LINE}"
        ) from None
    return endpoint


def logs_endpoint(environ: Mapping[str, str]) -> str:
    """The URL OTLP/HTTP log records are posted to, as the OTLP exporter resolves it."""
    own = environ.get("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "").strip()
    if own:
        name, url = "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", own
    else:
        base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or _DEFAULT_ENDPOINT
        name, url = "OTEL_EXPORTER_OTLP_ENDPOINT", base.rstrip("/") + _LOGS_PATH
    try:
        parts = urlsplit(url)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018  (raises ValueError on a port that is not a number)
    except ValueError:
        valid = False
    if not valid:
        raise TelemetrySetupError(
            f"{name}={url!r} is not an http:// or https:// URL; set it to the OTLP/HTTP "
            "receiver, such as http://localhost:4318"
        )
    return url


def trace_links(artifacts: Sequence[Artifact]) -> tuple[dict[str, TraceLink], list[str]]:
    """The span each traced artifact's events are parented to, by artifact key, and one
    note per trace that names no usable span (its events are sent unparented)."""
    links: dict[str, TraceLink] = {}
    notes: list[str] = []
    for artifact in artifacts:
        if artifact.trace is None:
            continue
        try:
            link = trace_link(_execution(artifact.trace))
        except (InputError, RecursionError, ValueError) as exc:
            notes.append(f"{artifact.key}: its trace cannot be read ({exc})")
            continue
        if link is None:
            notes.append(f"{artifact.key}: its trace has no W3C trace and span ids")
        else:
            links[artifact.key] = link
    return links, notes


def _execution(trace: object) -> Execution:
    from canon.gates.contracts.otel import normalize_trace, normalize_trace_text

    if isinstance(trace, Execution):
        return trace
    if isinstance(trace, os.PathLike):
        from canon.project.contract_files import read_trace

        return read_trace(Path(trace))
    if isinstance(trace, str):
        return normalize_trace_text(trace)
    return normalize_trace(trace)


def send_events(events: Sequence[EvaluationEvent], *, version: str) -> ExportSummary:
    """Send every event through the SDK's batch processor and OTLP/HTTP exporter, then flush
    and shut down; failures are counted and described, never raised (a setting that became
    unusable since ``check_telemetry`` is a failure too). The SDK reads ``os.environ``."""
    env = os.environ
    try:
        endpoint = check_telemetry(env)
    except TelemetrySetupError as exc:
        # Checked before the run too; only a project .env loaded since can get here.
        return ExportSummary("(not usable)", len(events), 0, problem=str(exc))
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return ExportSummary(endpoint, len(events), 0, disabled=True)

    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

    with _exporter_messages() as messages:
        exporter = _Counting(OTLPLogExporter())
        provider = LoggerProvider(resource=_resource(), shutdown_on_exit=False)  # shut below
        provider.add_log_record_processor(
            BatchLogRecordProcessor(
                cast(Any, exporter),  # duck-typed: subclassing would import the SDK at import
                max_queue_size=max(len(events), _BATCH_SIZE),
                max_export_batch_size=_BATCH_SIZE,
            )
        )
        logger = provider.get_logger("canon", version)
        try:
            for event in events:
                _emit(logger, event)
            provider.force_flush()
        finally:
            provider.shutdown()
    sent = min(exporter.sent, len(events))
    problem = None
    if sent < len(events):
        problem = exporter.problem or _described(messages)
    return ExportSummary(endpoint, len(events), sent, problem)


def _described(messages: Sequence[tuple[int, str]]) -> str:
    """The exporter's last error, with the operating system's reason when it gave one
    (its retry notes say "Connection refused"; its final error does not)."""
    errors = [text for level, text in messages if level >= logging.ERROR]
    text = errors[-1] if errors else "the exporter gave no reason"
    for _, note in messages:
        cause = _OS_REASON.search(note)
        if cause:
            return f"{text} ({cause.group(0)})"
    return text


def _resource() -> Any:
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource

    # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win; without them the SDK would say
    # "unknown_service:python", which reads worse in a backend than "canon".
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: DEFAULT_SERVICE_NAME}))
    return resource


def _emit(logger: Any, event: EvaluationEvent) -> None:
    from opentelemetry import trace
    from opentelemetry._logs import SeverityNumber
    from opentelemetry.context import Context

    context = Context()
    if event.trace_id is not None and event.span_id is not None:
        parent = trace.SpanContext(
            int(event.trace_id, 16),
            int(event.span_id, 16),
            is_remote=True,
            trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
        )
        context = trace.set_span_in_context(trace.NonRecordingSpan(parent), context)
    logger.emit(
        event_name=event.name,
        attributes=dict(event.attributes),
        context=context,
        severity_number=SeverityNumber.INFO,
        severity_text="INFO",
    )


class _Counting:
    """Wraps the OTLP exporter: counts what arrived; after one failed batch it stops trying,
    so an unreachable endpoint costs one timeout, not one per batch."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.sent = 0
        self.problem: str | None = None

    def export(self, batch: Sequence[Any]) -> Any:
        from opentelemetry.sdk._logs.export import LogRecordExportResult

        if self.problem is not None:
            return LogRecordExportResult.FAILURE
        try:
            result = self.inner.export(batch)
        except Exception as exc:  # the SDK's contract: an exporter may raise on network errors
            self.problem = f"{type(exc).__name__}: {exc}"
            return LogRecordExportResult.FAILURE
        if result == LogRecordExportResult.SUCCESS:
            self.sent += len(batch)
        else:
            self.problem = ""  # described by the exporter's own log message
        return result

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return bool(self.inner.force_flush(timeout_millis))

    def shutdown(self) -> None:
        self.inner.shutdown()


@contextmanager
def _exporter_messages() -> Iterator[list[tuple[int, str]]]:
    """Collect what the SDK logs while sending, instead of letting it print tracebacks and
    retry notes on stderr: the caller prints one line of its own."""
    messages: list[tuple[int, str]] = []

    class _Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING:
                messages.append((record.levelno, " ".join(record.getMessage().split())))

    target = logging.getLogger("opentelemetry")
    handler = _Collect()
    saved = target.propagate
    target.addHandler(handler)
    target.propagate = False
    try:
        yield messages
    finally:
        target.removeHandler(handler)
        target.propagate = saved
