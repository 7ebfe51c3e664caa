"""A local OpenAI-compatible server with the files and batches endpoints, for batch tests.

It stores uploaded files, accepts batches over them, and finishes a batch after it has been
polled ``polls_to_finish`` times: each request line is answered by ``reply`` (the same
function answers online chat completions, so the questions a batch leaves over can be asked
online). ``mode`` shapes how a batch ends:

- ``"complete"``: every request answered.
- ``"expire"``: only the first half answered, the batch ends ``expired``.
- ``"half_fail"``: every second request fails (500 in the error file).
- ``"fail"``: the batch ends ``failed`` with no output at all.
"""

from __future__ import annotations

import contextlib
import email.parser
import email.policy
import itertools
import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[dict[str, Any]], str]
PROMPT_TOKENS = 400
COMPLETION_TOKENS = 5


def default_reply(body: dict[str, Any]) -> str:
    """'no' to the contradiction (gate) question, 'yes' to everything else."""
    user = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
    from canon.project.store import load_rubric

    gate = load_rubric().gate  # asked in any of its wordings (re-asks and second looks)
    return "ANSWER: no" if any(w in user for w in (gate.text, *gate.wordings)) else "ANSWER: yes"


@dataclass
class BatchServer:
    """The server's state: files, batches and every request it received."""

    reply: Reply = default_reply
    online_reply: Reply | None = None  # for chat completions; None: the same as ``reply``
    mode: str = "complete"
    online_down: bool = False  # True: every chat completion is answered 503 (an outage)
    prompt_tokens: int = PROMPT_TOKENS  # the usage every online completion reports
    cached_tokens: int = 0  # of those, read from the provider's prompt cache
    poll_faults: int = 0  # this many batch polls get a 503 before polls work again
    polls_to_finish: int = 2
    port: int = 0
    files: dict[str, bytes] = field(default_factory=dict)
    batches: dict[str, dict[str, Any]] = field(default_factory=dict)
    chat_requests: list[dict[str, Any]] = field(default_factory=list)
    uploads: int = 0
    polls: int = 0
    connections: list[socket.socket] = field(default_factory=list)
    _ids: Iterator[int] = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        """The api_base to give an OpenAI client."""
        return f"http://127.0.0.1:{self.port}/v1"

    def new_id(self, prefix: str) -> str:
        """A fresh object id."""
        return f"{prefix}-{next(self._ids)}"

    def add_file(self, data: bytes, purpose: str) -> dict[str, Any]:
        """Store an uploaded (or produced) file and describe it."""
        with self._lock:
            file_id = self.new_id("file")
            self.files[file_id] = data
        return _file_object(file_id, data, purpose)

    def create_batch(self, body: dict[str, Any]) -> dict[str, Any]:
        """Accept a batch over an uploaded file."""
        file_id = str(body.get("input_file_id"))
        if file_id not in self.files:
            raise KeyError(file_id)
        lines = [json.loads(x) for x in self.files[file_id].decode().splitlines() if x.strip()]
        with self._lock:
            batch_id = self.new_id("batch")
            batch = {
                "id": batch_id,
                "object": "batch",
                "endpoint": body.get("endpoint", "/v1/chat/completions"),
                "errors": None,
                "input_file_id": file_id,
                "completion_window": body.get("completion_window", "24h"),
                "status": "validating",
                "output_file_id": None,
                "error_file_id": None,
                "created_at": 1_700_000_000,
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "metadata": body.get("metadata"),
                "_lines": lines,
                "_polls": 0,
            }
            self.batches[batch_id] = batch
        return _public(batch)

    def retrieve(self, batch_id: str) -> dict[str, Any]:
        """Poll a batch; it advances one step per poll and finishes after polls_to_finish."""
        batch = self.batches[batch_id]
        with self._lock:
            self.polls += 1
            batch["_polls"] += 1
            if batch["status"] in ("validating", "in_progress"):
                if batch["_polls"] >= self.polls_to_finish:
                    self._finish(batch)
                else:
                    batch["status"] = "in_progress"
        return _public(batch)

    def _finish(self, batch: dict[str, Any]) -> None:
        lines: list[dict[str, Any]] = batch["_lines"]
        if self.mode == "fail":
            batch["status"] = "failed"
            batch["errors"] = {"object": "list", "data": [{"code": "invalid", "message": "no"}]}
            batch["request_counts"]["failed"] = len(lines)
            return
        outputs: list[str] = []
        errors: list[str] = []
        for index, line in enumerate(lines):
            if self.mode == "expire" and index >= len(lines) // 2:
                continue  # never reached before the window closed
            if self.mode == "half_fail" and index % 2 == 1:
                errors.append(json.dumps(_error_line(line)))
                continue
            outputs.append(json.dumps(_output_line(line, self.reply)))
        counts = batch["request_counts"]
        counts["completed"], counts["failed"] = len(outputs), len(errors)
        if self.mode == "expire":
            counts["failed"] = len(lines) - len(outputs)
        batch["status"] = "expired" if self.mode == "expire" else "completed"
        if outputs:
            batch["output_file_id"] = self._store("\n".join(outputs) + "\n")
        if errors:
            batch["error_file_id"] = self._store("\n".join(errors) + "\n")

    def _store(self, text: str) -> str:
        file_id = self.new_id("file")
        self.files[file_id] = text.encode()
        return file_id


def _public(batch: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in batch.items() if not k.startswith("_")}


def _file_object(file_id: str, data: bytes, purpose: str) -> dict[str, Any]:
    return {
        "id": file_id,
        "object": "file",
        "bytes": len(data),
        "created_at": 1_700_000_000,
        "filename": "input.jsonl",
        "purpose": purpose,
        "status": "processed",
    }


def completion(
    body: dict[str, Any], reply: Reply, prompt_tokens: int = PROMPT_TOKENS, cached: int = 0
) -> dict[str, Any]:
    """A chat completion body answering ``body`` (one choice per requested sample)."""
    count = int(body.get("n") or 1)
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": COMPLETION_TOKENS * count,
        "total_tokens": prompt_tokens + COMPLETION_TOKENS * count,
    }
    if cached:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return {
        "id": "chatcmpl-batch",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": body.get("model", "fake"),
        "choices": [
            {
                "index": i,
                "message": {"role": "assistant", "content": reply(body)},
                "finish_reason": "stop",
            }
            for i in range(count)
        ],
        "usage": usage,
    }


def _output_line(line: dict[str, Any], reply: Reply) -> dict[str, Any]:
    return {
        "id": f"batch_req_{line['custom_id'][:8]}",
        "custom_id": line["custom_id"],
        "response": {
            "status_code": 200,
            "request_id": "r",
            "body": completion(line["body"], reply),
        },
        "error": None,
    }


def _error_line(line: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"batch_req_{line['custom_id'][:8]}",
        "custom_id": line["custom_id"],
        "response": {"status_code": 500, "request_id": "r", "body": {"error": {"message": "x"}}},
        "error": None,
    }


def _multipart(content_type: str, data: bytes) -> dict[str, bytes]:
    """The fields of a multipart/form-data body, by name."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + data
    )
    fields: dict[str, bytes] = {}
    for part in message.iter_parts():  # type: ignore[attr-defined]
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            fields[name] = payload
    return fields


def _handler(state: BatchServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            return

        def setup(self) -> None:
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            state.connections.append(self.connection)

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0].rstrip("/")
            parts = path.split("/")
            if len(parts) >= 4 and parts[-3] == "files" and parts[-1] == "content":
                data = state.files.get(parts[-2])
                if data is None:
                    self._send(404, {"error": {"message": "no such file"}})
                else:
                    self._send_raw(200, data, "application/octet-stream")
            elif parts[-2:-1] == ["files"] and parts[-1] in state.files:
                self._send(200, _file_object(parts[-1], state.files[parts[-1]], "batch"))
            elif parts[-2:-1] == ["batches"] and parts[-1] in state.batches:
                if state.poll_faults > 0:
                    state.poll_faults -= 1
                    self._send(503, {"error": {"message": "batch service unavailable"}})
                else:
                    self._send(200, state.retrieve(parts[-1]))
            else:
                self._send(404, {"error": {"message": f"no route {path}"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            data = self.rfile.read(length)
            path = self.path.split("?", 1)[0].rstrip("/")
            if path.endswith("/files"):
                fields = _multipart(self.headers.get("Content-Type", ""), data)
                state.uploads += 1
                purpose = fields.get("purpose", b"batch").decode()
                self._send(200, state.add_file(fields.get("file", b""), purpose))
            elif path.endswith("/batches"):
                try:
                    self._send(200, state.create_batch(json.loads(data or b"{}")))
                except KeyError:
                    self._send(400, {"error": {"message": "no such input file"}})
            elif path.endswith("/cancel"):
                batch = state.batches[path.split("/")[-2]]
                batch["status"] = "cancelled"
                self._send(200, _public(batch))
            elif path.endswith("/chat/completions"):
                body = json.loads(data or b"{}")
                state.chat_requests.append(body)
                if state.online_down:
                    self._send(503, {"error": {"message": "the service is down"}})
                    return
                reply = state.online_reply or state.reply
                self._send(200, completion(body, reply, state.prompt_tokens, state.cached_tokens))
            else:
                self._send(404, {"error": {"message": f"no route {path}"}})

        def _send(self, status: int, payload: object) -> None:
            self._send_raw(status, json.dumps(payload).encode("utf-8"), "application/json")

        def _send_raw(self, status: int, data: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client killed mid-request (the resume tests do that on purpose) is no news.
        return


@contextmanager
def running_batch_server(**settings: Any) -> Iterator[BatchServer]:
    """Serve a BatchServer on 127.0.0.1 (a free port) for the duration of the block."""
    state = BatchServer(**settings)
    server = _QuietServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    server.block_on_close = False
    state.port = server.server_address[1]
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="batch-llm", daemon=True
    )
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        for connection in state.connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
