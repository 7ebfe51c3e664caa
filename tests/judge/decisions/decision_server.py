"""A small decision-model server for the wire-client tests, built from the wire reference.

It serves OpenAI's Decisions wire (``POST /v1/decisions``: ``{model, input, questions:[…]}``
→ ``{model, answers:[…], usage}``) and a plain System One wire (``POST /v1/systemone``) for
the faults ``jevcompat mock`` has no switch for (529, 5xx, a stall, a dropped connection).
Answers are deterministic: each option's logit is a hash of (evidence, instructions, option),
and probabilities are rounded to two decimals as hosted servers round them.

Faults: ``faults`` are used up one per request before normal answers resume; ``always`` is
given to every request. A fault is an HTTP status ("401", "403", "404", "400", "422", "429",
"500", "502", "503", "529", each with the wire's error body; 429/503/529 carry
``Retry-After: <retry_after>``, or ``retry-after-ms`` when ``retry_after_ms`` is set),
"hang" (no reply for HANG_SECONDS), "drop" (close the connection without a reply) or
"garbage" (a 200 whose body is not JSON). ``tamper`` rewrites every 200 body before it goes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HANG_SECONDS = 3.0


@dataclass
class DecisionServer:
    """The server's state: its faults, what it reports, and every request it received."""

    faults: list[str] = field(default_factory=list)
    always: str | None = None
    model: str = "gpt-6-luna"  # the model every answer names
    retry_after: str = "0"
    retry_after_ms: str | None = None
    input_tokens: int = 420
    tamper: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def next_fault(self) -> str | None:
        with self._lock:
            if self.faults:
                return self.faults.pop(0)
        return self.always


def _probabilities(evidence: Any, instructions: Any, options: list[Any]) -> list[float]:
    logits = []
    for option in options:
        key = json.dumps([evidence, instructions, option], sort_keys=True, ensure_ascii=False)
        digest = hashlib.sha256(key.encode("utf-8")).digest()
        logits.append((int.from_bytes(digest[:8], "big") / 2**64 * 2 - 1) * 3)
    top = max(logits)
    weights = [math.exp(x - top) for x in logits]
    return [round(w / sum(weights), 2) for w in weights]


def _confidence(probabilities: list[float]) -> float:
    n = len(probabilities)
    return 1.0 if n == 1 else round((max(probabilities) - 1 / n) / (1 - 1 / n), 2)


def answer_openai(body: dict[str, Any], model: str, tokens: int) -> dict[str, Any]:
    answers = []
    for question in body["questions"]:
        values = [choice["value"] for choice in question["choices"]]
        probs = _probabilities(body["input"], question["instructions"], values)
        pick = values[probs.index(max(probs))]
        answers.append(
            {
                "type": "choice",
                "name": question.get("name"),
                "choice": pick,
                "confidence": _confidence(probs),
                "probabilities": [
                    {"value": v, "probability": p} for v, p in zip(values, probs, strict=True)
                ],
            }
        )
    usage = {
        "input_tokens": tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": 0,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": tokens,
    }
    return {"model": model, "answers": answers, "usage": usage}


def answer_systemone(body: dict[str, Any], model: str, tokens: int) -> dict[str, Any]:
    answers = {}
    for qid, question in body["questions"].items():
        names = list(question["criteria"])
        probs = _probabilities(body["state"], question["instructions"], names)
        answers[qid] = {
            "type": "choice",
            "choice": names[probs.index(max(probs))],
            "probabilities": dict(zip(names, probs, strict=True)),
            "confidence": _confidence(probs),
        }
    return {
        "model": model,
        "answers": answers,
        "usage": {"input_tokens": tokens, "output_tokens": 0},
    }


def _error_body(route: str, status: int) -> dict[str, Any]:
    message = {
        400: "Invalid request",
        401: "Incorrect API key provided",
        403: "Must supply an API key!",
        404: "Not found",
        422: "questions.q1.choice.criteria: Input should be a valid dictionary",
    }.get(status, "The server is overloaded, try again later")
    if route == "/v1/systemone":
        if status == 422:
            return {"detail": [{"loc": ["body", "questions", "q1"], "msg": message, "type": "x"}]}
        return {"detail": {"error_type": "api_error", "message": message}}
    return {"error": {"message": message, "type": "api_error", "param": None, "code": None}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: DecisionServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, raw: bytes, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)

    def do_POST(self) -> None:
        state = self.state
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        route = self.path
        if route not in ("/v1/decisions", "/v1/systemone"):
            self._send(404, json.dumps(_error_body(route, 404)).encode())
            return
        body = json.loads(raw)
        with state._lock:
            state.requests.append(body)
            state.headers.append({k.lower(): v for k, v in self.headers.items()})
        fault = state.next_fault()
        if fault == "hang":
            time.sleep(HANG_SECONDS)
            self.close_connection = True
            return
        if fault == "drop":
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(2)
            return
        if fault == "garbage":
            self._send(200, b"<html>upstream error</html>")
            return
        if fault is not None:
            status = int(fault)
            extra = {}
            if status in (429, 503, 529):
                if state.retry_after_ms is not None:
                    extra["retry-after-ms"] = state.retry_after_ms
                else:
                    extra["Retry-After"] = state.retry_after
            self._send(status, json.dumps(_error_body(route, status)).encode(), extra)
            return
        build = answer_openai if route == "/v1/decisions" else answer_systemone
        reply = build(body, state.model, state.input_tokens)
        if state.tamper is not None:
            reply = state.tamper(reply)
        self._send(200, json.dumps(reply, allow_nan=True).encode("utf-8"))


@contextmanager
def running(state: DecisionServer | None = None) -> Iterator[DecisionServer]:
    """The server on a free 127.0.0.1 port for the ``with`` block; ``state.url`` is its root."""
    state = state or DecisionServer()
    handler = type("Handler", (_Handler,), {"state": state})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
