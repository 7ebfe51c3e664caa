"""A tiny OpenAI-compatible chat server for judge tests and the judge benchmark.

It answers POST /v1/chat/completions from a script of rules, tried in order: the first rule
whose ``match`` text occurs in the request's user message decides the reply. A rule can
first inject faults (a 500, a 429 with Retry-After, a hang, a dropped connection, malformed
JSON, a 401), one per request, before it starts giving its scripted replies.

Like llama.cpp it can have a fixed number of ``slots``: requests beyond them wait in the
server's queue, each taking ``latency`` seconds of service. A rule's ``top`` gives the
log-probabilities returned (when asked for ``logprobs``) at the token that spells the answer.
A rule's ``refusal`` is sent as the message's ``refusal`` field (its content then null), and
its ``finish_reason`` replaces ``stop`` (e.g. ``content_filter``), as OpenAI does.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import re
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# A fault is one of: "400", "401", "403", "404", "429", "500", "503", "hang", "drop",
# "malformed", "empty", "nochoices" (HTTP 200 with an empty ``choices`` list).
HANG_SECONDS = 5.0


@dataclass
class Rule:
    """Requests whose user message contains ``match`` get ``faults`` first, then ``replies``."""

    match: str
    replies: Sequence[str]  # cycled; one per sample asked
    faults: list[str] = field(default_factory=list)
    always: str | None = None  # a fault given to every request, forever
    top: dict[str, float] | None = None  # token -> probability at the answer's position
    hits: int = 0
    refusal: str | None = None  # sent in message.refusal, with null content
    finish_reason: str = "stop"
    hot: str | None = None  # a fault given to every request above temperature 0 (a re-ask)


class FakeLLM:
    """The server's state: its rules and every request it received."""

    def __init__(self) -> None:
        self.rules: list[Rule] = []
        self.requests: list[dict[str, Any]] = []
        self.honour_n = True  # False: always one choice, like providers without ``n``
        self.retry_after = "0"
        # True: a request asking for ``logprobs`` gets a 400 saying so, as Groq's API does
        self.refuse_logprobs = False
        self.refuse_n = False  # True: a 400 for n above 1, in llama.cpp's server's words
        # With logprobs asked for: alternatives given at every other token too, as OpenAI
        # gives ``top_logprobs`` of them at each (0: none; benchmarks set it for real sizes)
        self.alternatives = 0
        self.prompt_tokens = 10  # the usage every 200 reply reports
        self._lock = threading.Lock()
        self.port = 0
        self.connections: list[socket.socket] = []  # closed at shutdown: no keep-alive afterlife
        self.latency = 0.0  # seconds each reply takes to compute
        self.slots: threading.Semaphore | None = None  # None: unlimited parallel service
        self.busy = 0  # requests in service now
        self.peak_busy = 0
        self.peak_waiting = 0  # the most requests queued at once behind busy slots
        self._waiting = 0

    def limit_slots(self, count: int, latency: float) -> None:
        """Serve at most ``count`` requests at a time, each for ``latency`` seconds."""
        self.slots = threading.Semaphore(count)
        self.latency = latency

    @contextmanager
    def serving(self) -> Iterator[None]:
        """Hold a slot (queueing behind busy ones) while one reply is computed."""
        with self._lock:
            self._waiting += 1
            self.peak_waiting = max(self.peak_waiting, self._waiting)
        if self.slots is not None:
            self.slots.acquire()
        with self._lock:
            self._waiting -= 1
            self.busy += 1
            self.peak_busy = max(self.peak_busy, self.busy)
        try:
            if self.latency:
                time.sleep(self.latency)
            yield
        finally:
            with self._lock:
                self.busy -= 1
            if self.slots is not None:
                self.slots.release()

    @property
    def base_url(self) -> str:
        """The api_base to give an OpenAI client."""
        return f"http://127.0.0.1:{self.port}/v1"

    def script(
        self,
        match: str,
        *replies: str,
        faults: Sequence[str] = (),
        always: str | None = None,
        top: dict[str, float] | None = None,
        refusal: str | None = None,
        finish_reason: str = "stop",
        hot: str | None = None,
    ) -> Rule:
        """Add a rule; later rules are tried after earlier ones."""
        rule = Rule(match, replies or ("ANSWER: yes",), list(faults), always, top)
        rule.refusal, rule.finish_reason, rule.hot = refusal, finish_reason, hot
        self.rules.append(rule)
        return rule

    def decide(self, body: dict[str, Any]) -> tuple[str | None, list[str], dict[str, float] | None]:
        """The fault to inject (or None), the reply contents and the rule's ``top``."""
        fault, replies, top, _ = self.decide_rule(body)
        return fault, replies, top

    def decide_rule(
        self, body: dict[str, Any]
    ) -> tuple[str | None, list[str], dict[str, float] | None, Rule | None]:
        """As ``decide``, with the rule that decided (None for the fallback reply)."""
        user = rubric_wording(
            "\n".join(
                str(m.get("content", ""))
                for m in body.get("messages", [])
                if m.get("role") == "user"
            )
        )
        with self._lock:
            self.requests.append(body)
            for rule in self.rules:
                if rule.match in user:
                    if rule.always is not None:
                        return rule.always, [], None, rule
                    if rule.hot is not None and float(body.get("temperature") or 0) > 0:
                        return rule.hot, [], None, rule
                    if rule.faults:
                        return rule.faults.pop(0), [], None, rule
                    count = int(body.get("n") or 1) if self.honour_n else 1
                    start = rule.hits
                    rule.hits += count
                    replies = [rule.replies[(start + i) % len(rule.replies)] for i in range(count)]
                    return None, replies, rule.top, rule
        return None, ["I cannot tell."], None, None


def _handler(state: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            return

        def setup(self) -> None:
            super().setup()
            # Headers and body go out in two writes; without this, Nagle's algorithm and the
            # client's delayed ACK add ~40 ms to every reply on a kept-alive connection.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            state.connections.append(self.connection)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self.path.endswith("/chat/completions"):
                self._send(404, {"error": {"message": "no such route"}})
                return
            if state.refuse_n and int(body.get("n") or 1) > 1:
                with state._lock:
                    state.requests.append(body)
                message = "Field 'n': Value must be between 1 <= value <= 1"
                self._send(400, {"error": {"code": 400, "message": message}})
                return
            if state.refuse_logprobs and body.get("logprobs"):
                with state._lock:
                    state.requests.append(body)
                self._send(
                    400,
                    {"error": {"message": "'logprobs' is not supported with this model"}},
                )
                return
            fault, replies, top, rule = state.decide_rule(body)
            if fault is None:
                with state.serving():
                    self._send(
                        200,
                        _completion(
                            body, replies, top, state.prompt_tokens, rule, state.alternatives
                        ),
                    )
            elif fault in ("500", "503"):
                self._send(int(fault), {"error": {"message": "server exploded", "type": "x"}})
            elif fault == "429":
                self._send(
                    429,
                    {"error": {"message": "slow down", "type": "rate_limit"}},
                    {"Retry-After": state.retry_after},
                )
            elif fault in ("400", "404"):
                self._send(int(fault), {"error": {"message": f"refused with {fault}", "type": "x"}})
            elif fault in ("401", "403"):
                self._send(
                    int(fault),
                    {"error": {"message": "Incorrect API key provided", "type": "auth"}},
                )
            elif fault == "hang":
                time.sleep(HANG_SECONDS)
                self.close_connection = True
            elif fault == "drop":
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
            elif fault == "malformed":
                self._send_raw(200, b'{"id": "x", "choices": [{"message": ')
            elif fault == "empty":
                self._send(200, _completion(body, [""], None, state.prompt_tokens))
            elif fault == "nochoices":
                self._send(200, _completion(body, [], None, state.prompt_tokens))
            elif fault == "schema":  # a server that refuses response_format, like some do
                if "response_format" in body:
                    self._send(400, {"error": {"message": "response_format is not supported"}})
                else:
                    self._send(200, _completion(body, ["ANSWER: yes"]))
            else:
                raise ValueError(f"unknown fault {fault!r}")

        def _send(
            self, status: int, payload: object, headers: dict[str, str] | None = None
        ) -> None:
            self._send_raw(status, json.dumps(payload).encode("utf-8"), headers)

        def _send_raw(
            self, status: int, data: bytes, headers: dict[str, str] | None = None
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _logprobs(text: str, top: dict[str, float] | None, alternatives: int = 0) -> dict[str, Any]:
    """Tokens of ``text`` (words and single other characters); ``top`` at the answer word,
    ``alternatives`` made-up rivals at every other token."""
    pieces = re.findall(r"\w+|\W", text)
    words = [i for i, piece in enumerate(pieces) if top and piece in top]
    answer_at = words[-1] if words else -1
    content = []
    for index, piece in enumerate(pieces):
        if index == answer_at and top:
            at_answer = [
                {"token": token, "logprob": math.log(p)} for token, p in top.items() if p > 0
            ]
            content.append(
                {"token": piece, "logprob": math.log(top[piece]), "top_logprobs": at_answer}
            )
        else:
            rivals = [
                {"token": f"~{j}", "logprob": -6.0 - j, "bytes": [126, 48 + j % 10]}
                for j in range(alternatives)
            ]
            content.append({"token": piece, "logprob": 0.0, "top_logprobs": rivals})
    return {"content": content}


def _completion(
    body: dict[str, Any],
    replies: list[str],
    top: dict[str, float] | None = None,
    prompt_tokens: int = 10,
    rule: Rule | None = None,
    alternatives: int = 0,
) -> dict[str, Any]:
    refusal = None if rule is None else rule.refusal
    finish = "stop" if rule is None else rule.finish_reason
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": body.get("model", "fake"),
        "choices": [
            {
                "index": i,
                "message": {
                    "role": "assistant",
                    "content": None if refusal is not None else text,
                    **({"refusal": refusal} if refusal is not None else {}),
                },
                "finish_reason": finish,
                **(
                    {"logprobs": _logprobs(text, top, alternatives)} if body.get("logprobs") else {}
                ),
            }
            for i, text in enumerate(replies)
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": 3,
            "total_tokens": prompt_tokens + 3,
        },
    }


@contextmanager
def running_fake_llm() -> Iterator[FakeLLM]:
    """Serve a FakeLLM on 127.0.0.1 (a free port) for the duration of the block."""
    state = FakeLLM()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    server.block_on_close = False  # a hanging handler must not hold up the test's teardown
    state.port = server.server_address[1]
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-llm", daemon=True
    )
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        for connection in state.connections:
            with contextlib.suppress(OSError):  # already closed by the client or handler
                connection.shutdown(socket.SHUT_RDWR)


def rubric_wording(text: str) -> str:
    """``text`` with every alternate wording of a rubric question put back in the rubric's
    own words, so a rule scripted on a question's text answers its re-asks too."""
    for pattern, primary in _alternates():
        text = pattern.sub(functools.partial(_primary, primary), text)
    return text


def _primary(primary: str, found: re.Match[str]) -> str:
    return primary.replace("{principle}", found.groupdict().get("p") or "")


@functools.cache
def _alternates() -> tuple[tuple[re.Pattern[str], str], ...]:
    from canon.project.store import load_rubric

    rubric = load_rubric()
    pairs = [(q.text, w) for q in rubric.fixed for w in q.wordings]
    pairs += [(rubric.principle_text, w) for w in rubric.principle_wordings]
    return tuple(
        (re.compile(re.escape(w).replace(re.escape("{principle}"), "(?P<p>.*?)")), text)
        for text, w in pairs
    )
