"""litellm fetches nothing of its own choosing at run time (price list, Anthropic beta headers).

litellm downloads its price list on import and, for an Anthropic model asked for structured
output, a beta-headers config on the first call, unless told to use its bundled copies. Both
URLs are pointed here at a local server that records every GET; a real judge run through
litellm in a fresh process must leave it empty.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

CONSTITUTION = Path(__file__).resolve().parents[2] / "examples" / "constitution.yaml"
# a model litellm sends Anthropic's structured-output beta header for
MODEL = "anthropic/claude-sonnet-4-5"
_MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "ANSWER: yes"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 10, "output_tokens": 3},
}
SCRIPT = """
import asyncio, sys
from canon.core.artifact import Artifact
from canon.judge.base import JudgeRequest
from canon.judge.litellm_judge import LiteLLMJudge
from canon.project.store import constitution_from_file, load_rubric

constitution = constitution_from_file(sys.argv[1])
rubric = load_rubric()
question = rubric.questions_for(constitution)[0]
judge = LiteLLMJudge(sys.argv[2], api_base=sys.argv[3], timeout=10, structured_output=True)
request = JudgeRequest(question, Artifact("Refunded."), constitution, rubric.instructions)
print(asyncio.run(judge.answer(request)).distribution)
"""


@pytest.fixture
def anthropic_endpoint() -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """An Anthropic-style /v1/messages endpoint on 127.0.0.1 that records every request."""
    seen: list[tuple[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            seen.append(("GET", self.path))
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen.append(("POST", self.path))
            data = json.dumps(_MESSAGE).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def test_an_anthropic_judge_run_fetches_no_remote_config(
    anthropic_endpoint: tuple[str, list[tuple[str, str]]],
) -> None:
    base, seen = anthropic_endpoint
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("LITELLM_") and not name.endswith(("_BASE_URL", "_API_BASE"))
    }
    env.update(
        ANTHROPIC_API_KEY="sk-ant-test",
        LITELLM_ANTHROPIC_BETA_HEADERS_URL=f"{base}/beta-headers.json",
        LITELLM_MODEL_COST_MAP_URL=f"{base}/prices.json",
    )
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(CONSTITUTION), MODEL, base],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{'yes': 1.0}"
    # the question, three answers to it (Anthropic gives labels alone, and takes no n:
    # samples: auto asks each in a request of its own), and no download
    assert seen == [("POST", "/v1/messages")] * 3
