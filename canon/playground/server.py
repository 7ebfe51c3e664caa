"""A loopback-only HTTP server: the playground page on ``/`` and evaluation on ``/evaluate``."""

from __future__ import annotations

import contextlib
import json
import secrets
import socket
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from canon.playground.errors import PlaygroundError
from canon.playground.evaluation import error_object, evaluate_texts
from canon.playground.page import content_security_policy, render_page

LOOPBACK = "127.0.0.1"

# Each editor text may reach the checker's 1,000,000-byte input limit; JSON string
# escaping in the request envelope at most doubles the quotes, backslashes and line
# breaks of real JSON text, so two full-size inputs still fit under this cap.
MAX_BODY_BYTES = 4_000_000

# A refused body is read and dropped up to this size before the connection closes.
_DRAIN_LIMIT = 64 * 1024 * 1024
_DRAIN_TIMEOUT_SECONDS = 2.0

_COMMON_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
}


class _Server(ThreadingHTTPServer):
    """The HTTP server plus the texts the page starts with."""

    daemon_threads = True

    def __init__(self, port: int, policy_text: str, response_text: str) -> None:
        super().__init__((LOOPBACK, port), _Handler)
        self.policy_text = policy_text
        self.response_text = response_text
        bound_port = self.server_address[1]
        # Only names that resolve to this machine: a page elsewhere that rebinds its own
        # domain to 127.0.0.1 still sends its own name as Host and is refused.
        self.allowed_hosts = {f"{LOOPBACK}:{bound_port}", f"localhost:{bound_port}"}
        self.allowed_origins = {f"http://{host}" for host in self.allowed_hosts}
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def drop_open_connections(self) -> None:
        """Cut connections still open (browsers pre-open idle ones) so stopping is final."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            # A handler may have closed it meanwhile; that is the outcome wanted anyway.
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    """Serves the page and answers evaluation requests; never touches the file system."""

    server: _Server
    server_version = "canon-playground"
    sys_version = ""
    body_read = False

    def log_message(self, format: str, *args: Any) -> None:
        # Request logs would interleave with the CLI's own output; the page shows errors.
        return

    def do_GET(self) -> None:
        if not self._host_allowed():
            return
        if urlsplit(self.path).path not in ("/", "/index.html"):
            self._send_json(HTTPStatus.NOT_FOUND, error_object("NOT_FOUND", "no such page"))
            return
        nonce = secrets.token_urlsafe(18)
        page = render_page(self.server.policy_text, self.server.response_text, nonce)
        self._send(
            HTTPStatus.OK,
            page.encode("utf-8"),
            "text/html; charset=utf-8",
            {"Content-Security-Policy": content_security_policy(nonce), "X-Frame-Options": "DENY"},
        )

    def do_POST(self) -> None:
        if not self._host_allowed() or not self._origin_allowed():
            return
        if urlsplit(self.path).path != "/evaluate":
            self._refuse(HTTPStatus.NOT_FOUND, "NOT_FOUND", "no such endpoint")
            return
        envelope = self._read_envelope()
        if envelope is None:
            return
        try:
            reply = evaluate_texts(*envelope)
        except Exception as exc:
            # A fault inside the checker must reach the page as an error, not a dropped
            # connection; the library's own controlled errors never get here.
            self._send_json(
                HTTPStatus.INTERNAL_SERVER_ERROR,
                error_object("INVALID_DATA", f"the evaluation failed unexpectedly: {exc!r}"),
            )
            return
        status = HTTPStatus.UNPROCESSABLE_ENTITY if "error" in reply else HTTPStatus.OK
        self._send_json(status, reply)

    def _read_envelope(self) -> tuple[str, str] | None:
        """Read ``{"policy": str, "response": str}``; answer the error and return None if bad."""
        media_type = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if media_type != "application/json":
            self._refuse(
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
                "INVALID_REQUEST",
                f"expected Content-Type application/json, got {media_type or 'none'}",
            )
            return None
        length_header = self.headers.get("Content-Length")
        if length_header is None or not length_header.isdigit():
            self._refuse(
                HTTPStatus.LENGTH_REQUIRED, "INVALID_REQUEST", "a Content-Length is required"
            )
            return None
        length = int(length_header)
        if length > MAX_BODY_BYTES:
            self._refuse(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                "REQUEST_TOO_LARGE",
                f"the request has {length} bytes, the limit is {MAX_BODY_BYTES}; "
                "shorten the policy or response (each input may have at most 1,000,000 bytes)",
            )
            return None
        body = self.rfile.read(length)
        self.body_read = True
        try:
            envelope = json.loads(body)
        except (ValueError, RecursionError):  # bad UTF-8, bad JSON, absurd nesting
            envelope = None
        if (
            not isinstance(envelope, dict)
            or not isinstance(envelope.get("policy"), str)
            or not isinstance(envelope.get("response"), str)
        ):
            self._refuse(
                HTTPStatus.BAD_REQUEST,
                "INVALID_REQUEST",
                'expected a JSON object {"policy": string, "response": string}',
            )
            return None
        return envelope["policy"], envelope["response"]

    def _host_allowed(self) -> bool:
        if self.headers.get("Host", "").lower() in self.server.allowed_hosts:
            return True
        self._refuse(
            HTTPStatus.FORBIDDEN,
            "FORBIDDEN_HOST",
            "the playground answers only requests addressed to 127.0.0.1 or localhost",
        )
        return False

    def _origin_allowed(self) -> bool:
        origin = self.headers.get("Origin")
        if origin is None or origin.lower() in self.server.allowed_origins:
            return True
        self._refuse(
            HTTPStatus.FORBIDDEN,
            "FORBIDDEN_ORIGIN",
            "the playground accepts evaluations only from its own page",
        )
        return False

    def _refuse(self, status: HTTPStatus, code: str, message: str) -> None:
        self._discard_body()
        # Whatever is left unread must not be parsed as the next request.
        self.close_connection = True
        self._send_json(status, error_object(code, message))

    def _discard_body(self) -> None:
        """Read and drop a refused body, so the client is not reset while still sending."""
        length_header = self.headers.get("Content-Length", "")
        if self.body_read or not length_header.isdigit():
            return
        remaining = min(int(length_header), _DRAIN_LIMIT)
        self.connection.settimeout(_DRAIN_TIMEOUT_SECONDS)
        try:
            while remaining > 0:
                chunk = self.rfile.read(min(remaining, 65536))
                if not chunk:
                    break
                remaining -= len(chunk)
        except OSError:
            pass  # a client that stalls or hangs up gets the connection closed instead

    def _send_json(self, status: HTTPStatus, value: object) -> None:
        body = json.dumps(value, sort_keys=True, ensure_ascii=False).encode("utf-8")
        self._send(status, body, "application/json; charset=utf-8", {})

    def _send(
        self, status: HTTPStatus, body: bytes, content_type: str, extra: dict[str, str]
    ) -> None:
        self.send_response(status)
        for name, value in {**_COMMON_HEADERS, **extra}.items():
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)


class PlaygroundServer:
    """The playground's HTTP server, bound to 127.0.0.1 on ``port`` (0 picks a free one)."""

    def __init__(self, policy_text: str, response_text: str, port: int = 0) -> None:
        try:
            self._server = _Server(port, policy_text, response_text)
        except OSError as exc:
            raise PlaygroundError(
                f"cannot listen on {LOOPBACK}:{port}: {exc.strerror or exc}; "
                "choose another --port or use 0 for a free one",
            ) from exc
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port the server is bound to."""
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The page's address."""
        return f"http://{LOOPBACK}:{self.port}/"

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted (KeyboardInterrupt propagates)."""
        self._server.serve_forever()

    def start(self) -> PlaygroundServer:
        """Serve from a background thread and return self."""
        # A short poll interval keeps close() quick; shutdown waits for the next poll.
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="canon-playground",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving (if a background thread runs) and release the socket."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.drop_open_connections()
        self._server.server_close()

    def __enter__(self) -> PlaygroundServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.close()
