"""``canon policy playground``: the smoke test's JSON contract, input errors, serving, Ctrl+C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from threading import Thread
from typing import Any

import pytest
from click.testing import CliRunner

from canon.cli import main
from canon.playground import run_smoke_checks
from canon.playground.examples import EXAMPLE_FAILING_RESPONSE, EXAMPLE_POLICY

_ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> Any:
    return CliRunner().invoke(main, ["policy", "playground", *args], catch_exceptions=False)


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_smoke_test_without_files_prints_an_ok_status_with_every_check_passed() -> None:
    result = _run("--smoke-test")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert result.stdout == json.dumps(report, sort_keys=True, indent=2) + "\n"
    # exactly the specified ready object, nothing added
    assert report == {
        "export_requires_explicit_action": True,
        "offline": True,
        "playground": "ready",
    }
    assert result.stderr == ""


def test_smoke_test_checks_the_given_policy_and_does_not_read_the_response(
    tmp_path: Path,
) -> None:
    policy = _write(tmp_path, "policy.json", EXAMPLE_POLICY.replace("playground-", "mine-"))
    for response in (
        _write(tmp_path, "response.json", EXAMPLE_FAILING_RESPONSE),
        _write(tmp_path, "broken.json", '{"decision": '),  # never read, so never refused
        str(tmp_path / "absent.json"),
    ):
        result = _run(policy, response, "--smoke-test")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["playground"] == "ready"


@pytest.mark.parametrize(
    ("policy_text", "code"),
    [
        ('{"schema_version": "1.0",', "INVALID_JSON_INPUT"),
        ('{"schema_version": 1.0, "policy_id": "p", "rules": []}', "INVALID_POLICY"),
        ("\ufeff{}", "INVALID_JSON_INPUT"),
    ],
)
def test_a_bad_policy_file_is_a_controlled_error_on_stderr_with_exit_2(
    tmp_path: Path, policy_text: str, code: str
) -> None:
    result = _run(_write(tmp_path, "policy.json", policy_text), "--smoke-test")
    assert result.exit_code == 2
    assert result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert error["code"] == code
    assert error["message"]


def test_a_bad_policy_is_refused_even_beside_an_unreadable_response(tmp_path: Path) -> None:
    policy = _write(tmp_path, "policy.json", "[]")
    result = _run(policy, str(tmp_path / "absent.json"), "--smoke-test")
    assert result.exit_code == 2
    assert json.loads(result.stderr)["error"]["code"] == "INVALID_POLICY"


class _ImpostorPage(BaseHTTPRequestHandler):
    """A server that is not the playground: it pulls a script from a CDN and accepts anything."""

    def do_GET(self) -> None:
        self._answer(b'<html><script src="https://cdn.example/app.js"></script></html>')

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self._answer(b'{"result": {"passed": true}}')

    def _answer(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def impostor_port() -> Iterator[int]:
    server = HTTPServer(("127.0.0.1", 0), _ImpostorPage)
    thread = Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_smoke_checks_fail_against_a_server_that_is_not_a_working_playground(
    impostor_port: int,
) -> None:
    report = run_smoke_checks(impostor_port, EXAMPLE_POLICY, "{}")
    status = report.to_dict()
    assert report.passed is False
    assert status["playground"] == "failed"
    assert status["offline"] is False
    assert report.checks["failing_example_fails"] is False
    assert report.checks["foreign_host_is_refused"] is False
    assert {"page_is_self_contained", "failing_example_fails"} <= set(status["problems"])
    assert "cdn.example" in status["problems"]["page_is_self_contained"]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(_ROOT), "PYTHONIOENCODING": "utf-8"}


def test_the_real_command_smoke_test_exits_0_with_an_ok_status() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "canon.cli", "policy", "playground", "--smoke-test"],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
        cwd=_ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["playground"] == "ready"


def test_serving_a_policy_alone_prefills_a_synthetic_passing_response_and_stops_on_ctrl_c(
    tmp_path: Path,
) -> None:
    policy = _write(tmp_path, "policy.json", EXAMPLE_POLICY)
    process = subprocess.Popen(
        [sys.executable, "-m", "canon.cli", "policy", "playground", policy, "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        cwd=_ROOT,
    )
    try:
        assert process.stdout is not None
        first_line = process.stdout.readline()
        url = first_line.split(": ", 1)[1].strip()
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(url) as reply:
            page = reply.read().decode("utf-8")
        assert '"review": {\n    "open_issues": [],\n    "risk": "low"' in page
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert "Playground stopped." in out
    assert "Traceback" not in err


def test_the_playground_command_module_imports_neither_litellm_nor_scipy() -> None:
    probe = (
        "import sys, canon.cli.policy_playground;"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'litellm', 'scipy', 'websockets'}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=_env(), timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
