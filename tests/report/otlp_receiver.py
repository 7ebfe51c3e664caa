"""A small OTLP/HTTP log receiver on 127.0.0.1 for the --otel tests.

It takes POST /v1/logs with a protobuf ``ExportLogsServiceRequest`` (gzip or plain), decodes
it with opentelemetry-proto's generated classes (they come with the OTLP exporter) and keeps
every log record as a plain dict. ``fail_with`` makes it answer every request with that
HTTP status instead (no retryable codes are used in tests, so no retry waits).
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


@dataclass
class Received:
    """What the receiver was sent: one dict per log record, and each request's path."""

    records: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    fail_with: int | None = None
    port: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def endpoint(self) -> str:
        """The base URL to put in OTEL_EXPORTER_OTLP_ENDPOINT."""
        return f"http://127.0.0.1:{self.port}"

    def named(self, evaluation: str) -> list[dict[str, Any]]:
        """The records whose gen_ai.evaluation.name is ``evaluation``."""
        return [
            r for r in self.records if r["attributes"].get("gen_ai.evaluation.name") == evaluation
        ]


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind)


def _records(request: ExportLogsServiceRequest) -> list[dict[str, Any]]:
    found = []
    for resource_logs in request.resource_logs:
        resource = {kv.key: _value(kv.value) for kv in resource_logs.resource.attributes}
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                found.append(
                    {
                        "event_name": record.event_name,
                        "attributes": {kv.key: _value(kv.value) for kv in record.attributes},
                        "trace_id": record.trace_id.hex(),
                        "span_id": record.span_id.hex(),
                        "severity": record.severity_text,
                        "resource": resource,
                        "scope": (scope_logs.scope.name, scope_logs.scope.version),
                    }
                )
    return found


def _handler(state: Received) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            with state.lock:
                state.paths.append(self.path)
            if state.fail_with is not None:
                self.send_response(state.fail_with)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            request = ExportLogsServiceRequest()
            request.ParseFromString(body)
            with state.lock:
                state.records.extend(_records(request))
            reply = ExportLogsServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

    return Handler


@contextmanager
def running_receiver() -> Iterator[Received]:
    """Serve on a free port of 127.0.0.1 until the block ends."""
    state = Received()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
