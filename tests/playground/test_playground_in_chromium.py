"""The playground page in a real headless Chromium: load, evaluate, errors, export."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from canon.playground import PlaygroundServer
from canon.playground.examples import (
    EXAMPLE_FAILING_REASONS,
    EXAMPLE_FAILING_RESPONSE,
    EXAMPLE_MALFORMED_POLICY,
    EXAMPLE_POLICY,
)

SCREENSHOT = Path("/tmp/canon-playground-screenshot.png")
_FINISHED = (
    "['passed', 'failed', 'error'].includes(document.getElementById('output').dataset.state)"
)


def _open(page: Any, server: PlaygroundServer) -> None:
    page.navigate(server.url)
    page.wait_until("document.getElementById('evaluate') !== null")


def _verdict(page: Any) -> dict[str, Any]:
    page.wait_until(_FINISHED)
    value: dict[str, Any] = page.evaluate(
        """(() => ({
            state: document.getElementById('output').dataset.state,
            banner: document.querySelector('#output .banner').textContent,
            reasons: [...document.querySelectorAll('#rule-results td.reason')]
                .map((cell) => cell.textContent),
            code: document.getElementById('error-code')?.textContent ?? null,
            exportEnabled: !document.getElementById('export').disabled,
        }))()"""
    )
    return value


def test_page_loads_with_no_request_beyond_the_playground_and_no_console_errors(
    page: Any, example_server: PlaygroundServer
) -> None:
    _open(page, example_server)
    page.click("evaluate")
    _verdict(page)
    urls = page.requested_urls()
    assert urls and all(url.startswith(example_server.url) for url in urls), urls
    assert page.console_problems() == []


def test_clicking_evaluate_shows_a_pass_for_the_passing_example(
    page: Any, example_server: PlaygroundServer
) -> None:
    _open(page, example_server)
    page.click("evaluate")
    verdict = _verdict(page)
    assert verdict["state"] == "passed"
    assert verdict["reasons"] == ["RULE_SATISFIED"] * 5
    assert verdict["exportEnabled"] is True


def test_a_failing_response_shows_each_rule_reason_code_including_field_missing(
    page: Any, example_server: PlaygroundServer
) -> None:
    _open(page, example_server)
    page.set_text("response", EXAMPLE_FAILING_RESPONSE)
    page.click("evaluate")
    verdict = _verdict(page)
    assert verdict["state"] == "failed"
    assert verdict["reasons"] == list(EXAMPLE_FAILING_REASONS)
    assert "4 of 5 rules failed" in verdict["banner"]
    SCREENSHOT.unlink(missing_ok=True)
    page.screenshot(SCREENSHOT)
    assert SCREENSHOT.read_bytes().startswith(b"\x89PNG")


def test_ctrl_enter_in_an_editor_evaluates_without_the_mouse(
    page: Any, example_server: PlaygroundServer
) -> None:
    _open(page, example_server)
    page.set_text("response", "{}")
    page.press_ctrl_enter()
    verdict = _verdict(page)
    assert verdict["state"] == "failed"
    assert verdict["reasons"] == ["FIELD_MISSING"] * 5


def test_a_malformed_policy_shows_the_controlled_error_code(
    page: Any, example_server: PlaygroundServer
) -> None:
    _open(page, example_server)
    page.set_text("policy", EXAMPLE_MALFORMED_POLICY)
    page.click("evaluate")
    verdict = _verdict(page)
    assert verdict["state"] == "error"
    assert verdict["code"] == "INVALID_JSON_INPUT"
    assert verdict["exportEnabled"] is False


def test_editing_after_an_evaluation_marks_the_result_as_stale(
    page: Any, example_server: PlaygroundServer
) -> None:
    _open(page, example_server)
    page.click("evaluate")
    _verdict(page)
    page.set_text("response", "{}")
    assert page.wait_until("document.getElementById('stale') !== null") is True


def test_export_downloads_exactly_the_last_result_json(
    page: Any, example_server: PlaygroundServer, tmp_path: Path
) -> None:
    page.send("Browser.setDownloadBehavior", behavior="allow", downloadPath=str(tmp_path))
    _open(page, example_server)
    page.set_text("response", EXAMPLE_FAILING_RESPONSE)
    page.click("evaluate")
    _verdict(page)
    shown = page.evaluate("document.getElementById('result-json').textContent")
    page.click("export")
    target = tmp_path / "playground-example-result.json"
    deadline = time.monotonic() + 20
    while not target.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert target.read_text(encoding="utf-8") == shown
    exported = json.loads(shown)
    assert exported["passed"] is False
    assert exported["policy_id"] == "playground-example"


def test_a_server_that_has_stopped_shows_an_unreachable_error_not_a_silent_failure(
    page: Any,
) -> None:
    server = PlaygroundServer(EXAMPLE_POLICY, EXAMPLE_FAILING_RESPONSE).start()
    try:
        _open(page, server)
    finally:
        server.close()
    page.click("evaluate")
    verdict = _verdict(page)
    assert verdict["state"] == "error"
    assert verdict["code"] == "PLAYGROUND_UNREACHABLE"
