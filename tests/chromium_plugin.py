"""Headless Chromium driven over the DevTools protocol, for any test that needs a browser.

Loaded as a pytest plugin from tests/conftest.py, so the ``chromium`` and ``page`` fixtures
are available in every test directory.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
_STARTUP_SECONDS = 30.0
_REPLY_SECONDS = 20.0


class DevToolsPage:
    """One browser tab, driven through the Chrome DevTools Protocol (flattened session)."""

    def __init__(self, browser: HeadlessChromium, session_id: str, target_id: str) -> None:
        self.browser = browser
        self.session_id = session_id
        self.target_id = target_id

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Send a command to this tab and return its result."""
        return self.browser.send(method, params, self.session_id)

    def navigate(self, url: str) -> None:
        """Open ``url`` and wait for its load event."""
        self.send("Page.navigate", url=url)
        self.browser.wait_for_event("Page.loadEventFired", self.session_id)

    def evaluate(self, expression: str) -> Any:
        """Evaluate JavaScript in the page and return its (JSON) value."""
        reply = self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in reply:
            raise AssertionError(f"page script failed: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def wait_until(self, expression: str, timeout: float = _REPLY_SECONDS) -> Any:
        """Poll ``expression`` until it is truthy; return its value."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {expression}")

    def click(self, element_id: str) -> None:
        """Click the middle of an element with real mouse events, as a user would."""
        box = self.evaluate(
            f"(() => {{ const r = document.getElementById({json.dumps(element_id)})"
            ".getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.send(
                "Input.dispatchMouseEvent",
                type=kind,
                x=box[0],
                y=box[1],
                button="left",
                clickCount=1,
            )

    def set_text(self, element_id: str, text: str) -> None:
        """Replace an editor's text the way typing would (the page sees an input event)."""
        self.evaluate(
            f"(() => {{ const box = document.getElementById({json.dumps(element_id)});"
            f" box.focus(); box.select(); }})()"
        )
        self.send("Input.insertText", text=text)

    def press_ctrl_enter(self) -> None:
        """Press Ctrl+Enter in the focused element."""
        for kind in ("rawKeyDown", "keyUp"):
            self.send(
                "Input.dispatchKeyEvent",
                type=kind,
                modifiers=2,
                key="Enter",
                code="Enter",
                windowsVirtualKeyCode=13,
            )

    def screenshot(self, path: Path) -> Path:
        """Save a full-page PNG screenshot."""
        reply = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.write_bytes(base64.b64decode(reply["data"]))
        return path

    def requested_urls(self) -> list[str]:
        """Every URL the tab asked the network for since it was opened."""
        return [
            event["params"]["request"]["url"]
            for event in self.browser.events
            if event.get("sessionId") == self.session_id
            and event["method"] == "Network.requestWillBeSent"
        ]

    def console_problems(self) -> list[str]:
        """Console errors and browser log errors (CSP violations land here)."""
        problems = []
        for event in self.browser.events:
            if event.get("sessionId") != self.session_id:
                continue
            if event["method"] == "Log.entryAdded" and event["params"]["entry"]["level"] == "error":
                problems.append(event["params"]["entry"]["text"])
            if event["method"] == "Runtime.consoleAPICalled" and event["params"]["type"] == "error":
                problems.append(json.dumps(event["params"]["args"]))
            if event["method"] == "Runtime.exceptionThrown":
                problems.append(json.dumps(event["params"]["exceptionDetails"]))
        return problems


class HeadlessChromium:
    """A headless Chromium process and one websocket to its DevTools endpoint."""

    def __init__(self, process: subprocess.Popen[bytes], socket: Any) -> None:
        self.process = process
        self.socket = socket
        self.events: list[dict[str, Any]] = []
        self._next_id = 0

    def send(
        self, method: str, params: dict[str, Any] | None = None, session_id: str | None = None
    ) -> dict[str, Any]:
        """Send one command and wait for its reply, keeping events that arrive meanwhile."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session_id is not None:
            message["sessionId"] = session_id
        self.socket.send(json.dumps(message))
        while True:
            incoming = json.loads(self.socket.recv(timeout=_REPLY_SECONDS))
            if incoming.get("id") == self._next_id:
                if "error" in incoming:
                    raise AssertionError(f"{method} failed: {incoming['error']}")
                result: dict[str, Any] = incoming["result"]
                return result
            self.events.append(incoming)

    def wait_for_event(
        self, method: str, session_id: str | None, timeout: float = _REPLY_SECONDS
    ) -> dict[str, Any]:
        """Wait for (and consume) the first matching event."""
        deadline = time.monotonic() + timeout
        while True:
            for index, event in enumerate(self.events):
                if event.get("method") == method and event.get("sessionId") == session_id:
                    return self.events.pop(index)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"timed out waiting for {method}")
            self.events.append(json.loads(self.socket.recv(timeout=remaining)))

    def new_page(self, width: int = 1280, height: int = 900) -> DevToolsPage:
        """Open a blank tab with page, network, runtime and log events enabled."""
        target_id = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session_id = self.send("Target.attachToTarget", {"targetId": target_id, "flatten": True})[
            "sessionId"
        ]
        page = DevToolsPage(self, session_id, target_id)
        for domain in ("Page", "Network", "Runtime", "Log"):
            page.send(f"{domain}.enable")
        page.send(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        return page

    def close_page(self, page: DevToolsPage) -> None:
        """Close a tab."""
        self.send("Target.closeTarget", {"targetId": page.target_id})


def _launch_chromium(profile: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Start headless Chromium; return the process and its DevTools websocket address."""
    process = subprocess.Popen(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-default-apps",
            "--disable-extensions",
            "--disable-sync",
            "--disable-dev-shm-usage",
            # Nothing but the loopback address resolves: the page cannot reach the internet
            # even if it tried, and a try shows up as a failed request in the event log.
            "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
            f"--user-data-dir={profile}",
            "--remote-debugging-port=0",
            "about:blank",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    port_file = profile / "DevToolsActivePort"
    deadline = time.monotonic() + _STARTUP_SECONDS
    while not port_file.exists() or len(port_file.read_text().splitlines()) < 2:
        if time.monotonic() > deadline or process.poll() is not None:
            _stop(process)
            raise RuntimeError("headless Chromium did not open its DevTools port")
        time.sleep(0.05)
    port, path = port_file.read_text().splitlines()[:2]
    return process, f"ws://127.0.0.1:{port}{path}"


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HeadlessChromium]:
    """A headless Chromium shared by one test module (skips when it is not installed)."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(
            "headless browser tests need Debian's chromium at /usr/bin/chromium "
            "(apt-get install -y chromium)"
        )
    pytest.importorskip(
        "websockets", reason="headless browser tests need the websockets package (test extra)"
    )
    from websockets.sync.client import connect

    process, address = _launch_chromium(tmp_path_factory.mktemp("chromium-profile"))
    try:
        with connect(address, max_size=None, open_timeout=10) as socket:
            yield HeadlessChromium(process, socket)
    finally:
        _stop(process)


@pytest.fixture
def page(chromium: HeadlessChromium) -> Iterator[DevToolsPage]:
    """A fresh browser tab, closed after the test."""
    tab = chromium.new_page()
    try:
        yield tab
    finally:
        chromium.close_page(tab)
