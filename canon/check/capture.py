"""A test's trace, captured in-process: the OpenTelemetry spans code emits inside a block.

``capture_trace()`` makes the block its own trace: it sets, as the current span, a parent
that records nothing (a fresh trace id, sampled), so every span started in the block (and
in asyncio tasks or threads that carry the block's context) belongs to that trace and to
no other. One span processor per tracer provider, added once, hands each finished span to
the capture whose trace id it carries; concurrent captures (threads, asyncio tasks, xdist
workers) therefore never mix spans. The spans become OTLP JSON, the format the contract
gate reads, and an ``Execution``: ``Artifact.trace`` accepts either.

The OpenTelemetry SDK is the optional ``otel`` extra, imported inside functions only.
"""

from __future__ import annotations

import base64
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from canon.core.artifact import Artifact, as_artifact
from canon.errors import UsageError
from canon.gates.contracts.execution import Execution
from canon.gates.contracts.otel.errors import TraceError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

INSTALL_LINE = 'pip install "canon-testing[otel]"'
SOURCE = "the captured trace"
_LOCK = threading.Lock()
# provider -> its router, added to it once (a provider dropped takes its router with it)
_ROUTERS: weakref.WeakKeyDictionary[Any, _Router] = weakref.WeakKeyDictionary()


@dataclass(eq=False)
class TraceCapture:
    """The spans one ``capture_trace()`` block records, readable at any time (the spans
    ended so far); complete once the block exits."""

    trace_id: int
    _spans: list[ReadableSpan] = field(default_factory=list, repr=False)

    @property
    def spans(self) -> tuple[ReadableSpan, ...]:
        """The finished spans of the block's trace, in the order they ended."""
        return tuple(self._spans)

    @property
    def otlp(self) -> dict[str, Any]:
        """The spans as an OTLP JSON document (``resourceSpans``), as a Collector writes it."""
        return otlp_document(self._spans, parent=_synthetic_span_id(self.trace_id))

    @property
    def trace(self) -> Execution:
        """The block's run as the contract gate reads it (``Artifact(text, trace=...)``): the
        spans ended so far. ``TraceError`` (exit 2) when no span has: an agent that emitted
        nothing is a missing instrumentation, never an empty pass.
        """
        from canon.gates.contracts import normalize_trace

        if not self._spans:
            raise TraceError(
                f"{SOURCE} holds no spans: nothing inside the block emitted an OpenTelemetry "
                "span (is the agent's client instrumented, e.g. OpenAIInstrumentor().instrument()?)"
            )
        execution: Execution = normalize_trace(self.otlp, source=SOURCE)
        return execution

    @property
    def request(self) -> str | None:
        """The request the run records (its input text), or None when it records none."""
        return self.trace.input_text

    def _add(self, span: ReadableSpan) -> None:
        self._spans.append(span)


class _Router:
    """What Canon's span processor on a provider does: each ended span goes to its capture."""

    def __init__(self) -> None:
        self.captures: dict[int, TraceCapture] = {}

    def route(self, span: ReadableSpan) -> None:
        context = span.context
        if context is not None:
            capture = self.captures.get(context.trace_id)
            if capture is not None:
                capture._add(span)


def _processor(router: _Router) -> Any:
    """An SDK span processor handing ended spans to ``router`` (the SDK is imported here)."""
    from opentelemetry.sdk.trace import SpanProcessor

    class CaptureProcessor(SpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            router.route(span)

    return CaptureProcessor()


@contextmanager
def capture_trace() -> Iterator[TraceCapture]:
    """Record the OpenTelemetry spans the code inside the block emits, as one trace.

    The spans go through the tracer provider in use (an SDK ``TracerProvider``); when none
    is set, Canon installs one. Spans started in threads that do not carry the block's
    context (a bare ``threading.Thread``) start traces of their own and are not captured;
    ``contextvars.copy_context().run`` or an executor that propagates context keeps them in.
    """
    trace_api, router = _router()
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    trace_id = RandomIdGenerator().generate_trace_id()
    capture = TraceCapture(trace_id)
    parent = NonRecordingSpan(
        SpanContext(
            trace_id=trace_id,
            span_id=_synthetic_span_id(trace_id),
            is_remote=False,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
    )
    from opentelemetry import context as context_api

    with _LOCK:
        router.captures[trace_id] = capture
    token = context_api.attach(trace_api.set_span_in_context(parent))
    try:
        yield capture
    finally:
        context_api.detach(token)
        with _LOCK:
            router.captures.pop(trace_id, None)


def _router() -> tuple[Any, _Router]:
    """The OpenTelemetry trace API and the router on the provider in use (added if new)."""
    try:
        from opentelemetry import trace as trace_api
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError:
        raise UsageError(f"capture_trace() needs the OpenTelemetry SDK: {INSTALL_LINE}") from None
    with _LOCK:
        provider = trace_api.get_tracer_provider()
        if not isinstance(provider, TracerProvider):
            if not isinstance(
                provider, trace_api.ProxyTracerProvider | trace_api.NoOpTracerProvider
            ):
                raise UsageError(
                    f"capture_trace() records through an OpenTelemetry SDK TracerProvider; the "
                    f"one in use is a {type(provider).__module__}.{type(provider).__name__}"
                )
            provider = TracerProvider()
            trace_api.set_tracer_provider(provider)
            provider = trace_api.get_tracer_provider()  # the first one set wins
            if not isinstance(provider, TracerProvider):  # pragma: no cover - set elsewhere
                raise UsageError("capture_trace() could not install an SDK TracerProvider")
        router = _ROUTERS.get(provider)
        if router is None:
            router = _ROUTERS[provider] = _Router()
            provider.add_span_processor(_processor(router))
    return trace_api, router


def _synthetic_span_id(trace_id: int) -> int:
    """The span id of the block's recording-less parent (never exported): non-zero."""
    return (trace_id & 0xFFFFFFFFFFFFFFFF) or 1


def otlp_document(spans: Sequence[ReadableSpan], *, parent: int | None = None) -> dict[str, Any]:
    """SDK spans as OTLP JSON, grouped by resource and scope in the order first seen; a
    parent id equal to ``parent`` (the capture's unexported parent) is dropped."""
    blocks: dict[int, tuple[dict[str, Any], dict[tuple[str, str], list[Any]]]] = {}
    for span in spans:
        resource = span.resource
        block = blocks.get(id(resource))
        if block is None:
            attributes = {} if resource is None else resource.attributes
            block = blocks[id(resource)] = ({"attributes": _kv_list(attributes)}, {})
        scope = span.instrumentation_scope
        key = ("", "") if scope is None else (scope.name, scope.version or "")
        block[1].setdefault(key, []).append(_span(span, parent))
    return {
        "resourceSpans": [
            {
                "resource": resource,
                "scopeSpans": [
                    {"scope": {"name": name, "version": version}, "spans": spans_of}
                    for (name, version), spans_of in scopes.items()
                ],
            }
            for resource, scopes in blocks.values()
        ]
    }


def _span(span: ReadableSpan, synthetic: int | None) -> dict[str, Any]:
    context = span.context
    assert context is not None  # an SDK span always has one
    out: dict[str, Any] = {
        "traceId": f"{context.trace_id:032x}",
        "spanId": f"{context.span_id:016x}",
        "name": span.name,
        "kind": span.kind.value + 1,  # the API's INTERNAL is 0; OTLP's is 1
        "startTimeUnixNano": str(span.start_time or 0),
        "endTimeUnixNano": str(span.end_time or 0),
        "attributes": _kv_list(span.attributes or {}),
        "status": {"code": span.status.status_code.value},
    }
    if span.parent is not None and span.parent.span_id != synthetic:
        out["parentSpanId"] = f"{span.parent.span_id:016x}"
    if span.status.description:
        out["status"]["message"] = span.status.description
    if span.events:
        out["events"] = [
            {
                "name": event.name,
                "timeUnixNano": str(event.timestamp),
                "attributes": _kv_list(event.attributes or {}),
            }
            for event in span.events
        ]
    return out


def _kv_list(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": _any_value(value)} for key, value in attributes.items()]


def _any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, bytes):
        return {"bytesValue": base64.b64encode(value).decode("ascii")}
    if isinstance(value, str):
        return {"stringValue": value}
    return {"arrayValue": {"values": [_any_value(item) for item in value]}}


def traced_artifact(
    value: object, *, input: object = None, context: object = None, trace: object = None
) -> Artifact:
    """``as_artifact`` with a ``trace`` (a ``TraceCapture`` or any trace the contract gate
    reads); the request is read from the trace when no ``input`` is given."""
    item = as_artifact(value, input=input, context=context)
    given = item.trace if trace is None else trace
    if isinstance(given, TraceCapture):
        given = given.trace
    if given is not item.trace:
        item = replace(item, trace=given)
    return with_trace_request(item)


def with_trace_request(artifact: Artifact) -> Artifact:
    """The artifact with its request read from its trace when it gives no ``input`` and the
    trace is an ``Execution`` recording one (a captured trace is)."""
    trace = artifact.trace
    if artifact.input is not None or not isinstance(trace, Execution):
        return artifact
    request = trace.input_text
    if request is None or not request.strip():
        return artifact
    return replace(artifact, input=request)
