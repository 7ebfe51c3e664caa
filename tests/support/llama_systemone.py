"""A real model behind the System One wire: a local llama.cpp model answers typed choices.

``POST /v1/systemone`` takes ``{model, state, questions: {id: {type: choice, instructions,
criteria: {option: description | null}}}}`` and answers every question from the model's
log-probabilities of the letter that names each option: the state is the system message,
the question and its options (A, B, C, …, with their descriptions) the user message, and
one token is generated. The letters' probabilities among the top log-probabilities of that
token, renormalised over the options offered, are the answer's distribution (an option
absent from the top ones gets the least probability shown there: an upper bound on its
own). Probabilities are rounded to two decimals, as hosted servers round them.

Each request's state is first sent alone, so that llama.cpp's prompt cache holds it, and
every question reuses that cached state. llama.cpp's numbers differ slightly with how a
prompt is split between its cache and the new batch, so a state other than the one cached
is computed afresh, never from a part of another state that happens to match: the same
request then gets the same answer whatever was asked before. The upstream must serve this
server alone (another client would change its cache behind it): an OpenAI-compatible
server (xllamacpp's, as tests/judge/local_model_server.py starts it) with one slot, so the
questions are asked one after another.

This lives in tests/support, not canon.playground: it needs xllamacpp and the SmolLM2
model file, which are test dependencies, and a 135M model's answers prove the path only.
"""

from __future__ import annotations

import json
import math
import threading
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "smollm2-systemone"  # the ``model`` every response names
TOP = 20  # log-probabilities asked for at the answer token
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
SYSTEM = (
    "You are a careful judge. The JSON document below is the state you judge; answer each "
    "question about it with the letter of exactly one option.\n\nSTATE:\n"
)


@dataclass
class LlamaSystemOne:
    """The server's state: where the model is, and what it was asked."""

    upstream: str  # the model's OpenAI-compatible root, ``http://127.0.0.1:P/v1``
    upstream_model: str = "smollm2"
    timeout: float = 120.0
    url: str = ""  # this server's root, once running
    requests: list[dict[str, Any]] = field(default_factory=list)  # System One bodies
    upstream_calls: int = 0
    _primed: str = ""  # the system prompt whose state the upstream's cache holds
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def respond(self, body: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and JSON body answering one System One request."""
        problem = _invalid(body)
        if problem is not None:
            return 422, {"detail": [{"loc": ["body"], "msg": problem, "type": "value_error"}]}
        system = SYSTEM + json.dumps(body["state"], indent=1, ensure_ascii=False)
        answers: dict[str, Any] = {}
        tokens = 0
        with self._lock:  # one slot upstream, and the cache must hold this state
            self.requests.append(dict(body))
            # A new state is computed afresh; the one already cached is reused as it is.
            tokens += self._complete(system, None, fresh=system != self._primed)[1]
            self._primed = system
            for qid, question in body["questions"].items():
                options = list(question["criteria"])
                prompt = _question(question["instructions"], question["criteria"])
                top, used = self._complete(system, prompt)
                tokens += used
                answers[qid] = _answer(options, top)
        usage = {"input_tokens": tokens, "output_tokens": 0}
        return 200, {"model": MODEL, "answers": answers, "usage": usage}

    def _complete(
        self, system: str, question: str | None, *, fresh: bool = False
    ) -> tuple[dict[str, float], int]:
        """One token after ``system`` (and ``question``): its top log-probabilities by the
        token's text, and the prompt tokens the model read; ``fresh`` computes the whole
        prompt anew instead of reusing what the cache holds of it."""
        messages = [{"role": "system", "content": system}]
        if question is not None:
            messages.append({"role": "user", "content": question})
        request = {
            "model": self.upstream_model,
            "messages": messages,
            "max_tokens": 1,
            "temperature": 0,
            "logprobs": True,
            "top_logprobs": TOP,
            "cache_prompt": not fresh,
        }
        raw = json.dumps(request).encode("utf-8")
        post = urllib.request.Request(
            f"{self.upstream}/chat/completions", raw, {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(post, timeout=self.timeout) as response:
            reply = json.load(response)
        self.upstream_calls += 1
        (first,) = reply["choices"][0]["logprobs"]["content"][:1]
        top: dict[str, float] = {}
        for item in first["top_logprobs"]:
            top.setdefault(item["token"].strip(), float(item["logprob"]))
        return top, int(reply["usage"]["prompt_tokens"])


def _invalid(body: Any) -> str | None:
    """Why a request is not a System One choice request, or None."""
    if not isinstance(body, Mapping) or not isinstance(body.get("model"), str):
        return "the body needs a string 'model'"
    if "state" not in body or not isinstance(body.get("questions"), Mapping):
        return "the body needs 'state' and a 'questions' object"
    for qid, question in body["questions"].items():
        if not isinstance(question, Mapping) or question.get("type") != "choice":
            return f"question {qid!r}: only choice questions are served here"
        criteria = question.get("criteria")
        if not isinstance(criteria, Mapping) or not 2 <= len(criteria) <= len(LETTERS):
            return f"question {qid!r}: criteria must map 2 to {len(LETTERS)} options"
        if not isinstance(question.get("instructions"), str):
            return f"question {qid!r}: instructions must be a string"
    return None


def _question(instructions: str, criteria: Mapping[str, str | None]) -> str:
    lines = [instructions.strip(), "", "Options:"]
    for letter, (name, meaning) in zip(LETTERS, criteria.items(), strict=False):
        lines.append(f"{letter}: {name}" + (f" ({meaning})" if meaning else ""))
    lines += ["", "Answer with the letter of one option."]
    return "\n".join(lines)


def _answer(options: list[str], top: Mapping[str, float]) -> dict[str, Any]:
    """A choice answer: the options' probabilities from their letters' log-probabilities."""
    floor = min(top.values()) if top else 0.0
    logprobs = [top.get(letter, floor) for letter in LETTERS[: len(options)]]
    peak = max(logprobs)
    weights = [math.exp(value - peak) for value in logprobs]
    probabilities = [round(weight / sum(weights), 2) for weight in weights]
    pick = probabilities.index(max(probabilities))
    n = len(options)
    confidence = round((probabilities[pick] - 1 / n) / (1 - 1 / n), 2)
    return {
        "type": "choice",
        "choice": options[pick],
        "probabilities": dict(zip(options, probabilities, strict=True)),
        "confidence": max(0.0, confidence),
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_state: LlamaSystemOne

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path != "/v1/systemone":
            self._send(404, {"detail": {"error_type": "not_found", "message": self.path}})
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._send(422, {"detail": [{"loc": ["body"], "msg": "not JSON", "type": "json"}]})
            return
        try:
            status, reply = self.server_state.respond(body)
        except OSError as exc:  # the model server is gone or timed out
            status, reply = 503, {"detail": {"error_type": "api_error", "message": str(exc)}}
        self._send(status, reply)

    def _send(self, status: int, payload: Mapping[str, Any]) -> None:
        raw = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@contextmanager
def running_systemone(state: LlamaSystemOne) -> Iterator[LlamaSystemOne]:
    """Serve ``state`` on a free 127.0.0.1 port for the block; ``state.url`` is its root."""
    handler = type("Handler", (_Handler,), {"server_state": state})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
