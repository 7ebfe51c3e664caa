"""``canon monitor ingest``: an OTLP/HTTP trace receiver that feeds the Redis streams.

An OpenTelemetry Collector (or an SDK's OTLP/HTTP exporter) posts
``ExportTraceServiceRequest`` messages to ``/v1/traces``, as protobuf
(``application/x-protobuf``) or as OTLP JSON (``application/json``). Both are decoded by the
OpenTelemetry protobuf package (``opentelemetry-proto``), never by hand; each request's
spans are split by trace id, and each trace's share goes to its stream as one OTLP JSON
document (``canon.monitor.streams.append_spans``). A body that does not decode is answered
400 with the reason; a Redis that cannot take the spans, 503 (the Collector retries).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from canon.errors import InputError
from canon.monitor.streams import Keys, append_spans

TRACES_PATH = "/v1/traces"
INSTALL_LINE = 'pip install "canon-testing[online]"'
_ID_FIELDS = ("traceId", "spanId", "parentSpanId")
MAX_BODY = 64 << 20


class OtlpError(InputError):
    """A request body that is no OTLP trace export."""


def _proto() -> tuple[Any, Any, Any]:
    try:
        from google.protobuf import json_format  # type: ignore[import-untyped]
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    except ImportError:
        raise InputError(
            f"canon monitor ingest needs opentelemetry-proto, which is not installed: "
            f"{INSTALL_LINE}"
        ) from None
    return (
        trace_service_pb2.ExportTraceServiceRequest,
        trace_service_pb2.ExportTraceServiceResponse,
        json_format,
    )


def _recode_ids(document: Any, convert: Callable[[str], str]) -> None:
    """OTLP JSON writes ids in hex where protobuf's JSON mapping uses base64: convert."""
    for resource in document.get("resourceSpans", ()) or ():
        for scope in resource.get("scopeSpans", ()) or ():
            for span in scope.get("spans", ()) or ():
                for name in _ID_FIELDS:
                    if span.get(name):
                        span[name] = convert(span[name])
                for link in span.get("links", ()) or ():
                    for name in ("traceId", "spanId"):
                        if link.get(name):
                            link[name] = convert(link[name])


def _hex_to_b64(value: str) -> str:
    try:
        return base64.b64encode(bytes.fromhex(value)).decode()
    except ValueError:
        raise OtlpError(f"OTLP JSON: id {value!r} is not hex") from None


def _b64_to_hex(value: str) -> str:
    return base64.b64decode(value).hex()


def decode_request(body: bytes, content_type: str) -> Any:
    """The ``ExportTraceServiceRequest`` in ``body``, protobuf or OTLP JSON."""
    request_type, _, json_format = _proto()
    message = request_type()
    kind = content_type.split(";")[0].strip().lower()
    if kind == "application/json":
        try:
            document = json.loads(body)
        except ValueError as exc:
            raise OtlpError(f"OTLP JSON: not JSON ({exc})") from None
        if not isinstance(document, dict):
            raise OtlpError("OTLP JSON: expected an object with resourceSpans")
        _recode_ids(document, _hex_to_b64)
        try:
            json_format.ParseDict(document, message)
        except json_format.ParseError as exc:
            raise OtlpError(f"OTLP JSON: {exc}") from None
        return message
    if kind in ("application/x-protobuf", "application/protobuf"):
        try:
            message.ParseFromString(body)
        except Exception as exc:  # protobuf's DecodeError has no stable import path
            raise OtlpError(f"OTLP protobuf: cannot decode ({exc})") from None
        return message
    raise OtlpError(
        f"content type {content_type!r}: send application/x-protobuf or application/json"
    )


def split_by_trace(message: Any) -> Iterator[tuple[str, str, bool]]:
    """Each trace of a request: (hex trace id, its OTLP JSON document, root span ended)."""
    request_type, _, json_format = _proto()
    parts: dict[str, Any] = {}
    resources: dict[tuple[str, int], Any] = {}
    scopes: dict[tuple[str, int, int], Any] = {}
    roots: dict[str, bool] = {}
    for r, resource_spans in enumerate(message.resource_spans):
        for s, scope_spans in enumerate(resource_spans.scope_spans):
            for span in scope_spans.spans:
                trace_id = span.trace_id.hex()
                if len(trace_id) != 32:
                    raise OtlpError(f"span {span.name!r}: trace id {trace_id!r} is not 16 bytes")
                scope = scopes.get((trace_id, r, s))
                if scope is None:
                    resource = resources.get((trace_id, r))
                    if resource is None:
                        part = parts.get(trace_id)
                        if part is None:
                            part = parts[trace_id] = request_type()
                        resource = resources[(trace_id, r)] = part.resource_spans.add()
                        resource.resource.CopyFrom(resource_spans.resource)
                        resource.schema_url = resource_spans.schema_url
                    scope = scopes[(trace_id, r, s)] = resource.scope_spans.add()
                    scope.scope.CopyFrom(scope_spans.scope)
                    scope.schema_url = scope_spans.schema_url
                scope.spans.append(span)
                if not span.parent_span_id and span.end_time_unix_nano:
                    roots[trace_id] = True
    for trace_id, part in parts.items():
        document = json_format.MessageToDict(part, use_integers_for_enums=True)
        _recode_ids(document, _b64_to_hex)
        yield trace_id, json.dumps(document, separators=(",", ":")), roots.get(trace_id, False)


def make_server(client: Any, keys: Keys, streams: int, host: str, port: int) -> ThreadingHTTPServer:
    """The receiver, bound and ready to ``serve_forever``."""
    _proto()  # a missing package is an error before the port opens
    import redis

    _, response_type, json_format = _proto()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # the Collector retries loud
            return

        def do_POST(self) -> None:
            if self.path.split("?")[0] != TRACES_PATH:
                self._reply(404, "text/plain", f"POST OTLP traces to {TRACES_PATH}".encode())
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                self._reply(413, "text/plain", b"request too large")
                return
            body = self.rfile.read(length)
            content_type = self.headers.get("Content-Type", "")
            try:
                message = decode_request(body, content_type)
                batches = list(split_by_trace(message))
            except OtlpError as exc:
                self._reply(400, "text/plain", str(exc).encode())
                return
            try:
                append_spans(client, keys, streams, batches)
            except redis.RedisError as exc:
                self._reply(503, "text/plain", f"redis: {exc}".encode())
                return
            response = response_type()
            if content_type.startswith("application/json"):
                self._reply(200, "application/json", json_format.MessageToJson(response).encode())
            else:
                self._reply(200, "application/x-protobuf", response.SerializeToString())

        def _reply(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return ThreadingHTTPServer((host, port), Handler)
