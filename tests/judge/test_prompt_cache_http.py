"""Anthropic prompt caching through real HTTP: litellm to a local Messages-API stand-in."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from canon.core.artifact import Artifact
from canon.judge.base import JudgeRequest
from canon.judge.litellm_judge import LiteLLMJudge
from canon.project.store import load_rubric

MODEL = "anthropic/claude-3-5-sonnet-20241022"
LONG_TEXT = "I refunded the duplicate charge of 19.99 EUR under handbook section 4.2. " * 120


class _Messages(BaseHTTPRequestHandler):
    bodies: list[dict[str, Any]]

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        self.bodies.append(json.loads(self.rfile.read(length)))
        reply = {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": MODEL.split("/", 1)[1],
            "content": [{"type": "text", "text": "It serves the mission.\nANSWER: yes"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": 300,
                "output_tokens": 9,
                "cache_read_input_tokens": 1200,
                "cache_creation_input_tokens": 0,
            },
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:  # keep the test output clean
        pass


@pytest.fixture
def anthropic_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A Messages-API stand-in on 127.0.0.1 that records every request body."""
    bodies: list[dict[str, Any]] = []
    handler = type("Handler", (_Messages,), {"bodies": bodies})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", bodies
    finally:
        server.shutdown()
        server.server_close()


def _ask(url: str, constitution: Any, text: str, shares: int) -> Any:
    judge = LiteLLMJudge(
        MODEL, api_base=url, api_key="sk-ant-test", structured_output=False, max_attempts=1
    )
    rubric = load_rubric()
    question = rubric.questions_for(constitution)[0]
    request = JudgeRequest(
        question, Artifact(text), constitution, rubric.instructions, prefix_shares=shares
    )
    return asyncio.run(judge.answer(request))


def _marked_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = [
        block
        for message in body.get("messages", [])
        if isinstance(message.get("content"), list)
        for block in message["content"]
    ]
    return [b for b in blocks if isinstance(b, dict) and "cache_control" in b]


def test_a_long_shared_prefix_is_marked_and_its_cached_tokens_reported(
    anthropic_server, constitution
):
    url, bodies = anthropic_server
    answer = _ask(url, constitution, LONG_TEXT, shares=10)
    (marked,) = _marked_blocks(bodies[-1])
    assert marked["cache_control"] == {"type": "ephemeral"}
    assert LONG_TEXT.strip() in marked["text"] and "QUESTION" not in marked["text"]
    assert answer.distribution == {"yes": 1.0}
    # three answers (samples: auto: Anthropic gives no log-probabilities and takes no n),
    # each a request reading the cached prefix
    assert len(bodies) == 3 and all(_marked_blocks(body) for body in bodies)
    assert answer.usage is not None and answer.usage.cached_tokens == 3 * 1200


@pytest.mark.parametrize(
    ("text", "shares"),
    [(LONG_TEXT, 1), ("A short reply.", 10)],
    ids=["read-by-no-other-request", "below-the-minimum-length"],
)
def test_no_marker_when_caching_would_not_pay(anthropic_server, constitution, text, shares):
    url, bodies = anthropic_server
    _ask(url, constitution, text, shares)
    assert _marked_blocks(bodies[-1]) == []
