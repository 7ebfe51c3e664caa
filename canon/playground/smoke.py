"""The headless smoke check: drive a running playground over HTTP, no browser involved."""

from __future__ import annotations

import html
import http.client
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from canon.playground.evaluation import evaluate_texts
from canon.playground.examples import (
    EXAMPLE_FAILING_REASONS,
    EXAMPLE_FAILING_RESPONSE,
    EXAMPLE_INVALID_POLICY,
    EXAMPLE_MALFORMED_POLICY,
    EXAMPLE_PASSING_RESPONSE,
    EXAMPLE_POLICY,
)
from canon.playground.page import find_external_references
from canon.playground.server import LOOPBACK, MAX_BODY_BYTES

_TIMEOUT_SECONDS = 10.0
_PAGE_IDS = ('id="policy"', 'id="response"', 'id="evaluate"', 'id="export"')


@dataclass(frozen=True, slots=True)
class _Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True, slots=True)
class SmokeReport:
    """Which smoke checks passed, and why the others did not."""

    checks: dict[str, bool]
    problems: dict[str, str] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """True when every check passed."""
        return all(self.checks.values())

    def to_dict(self) -> dict[str, Any]:
        """The JSON status object the CLI prints.

        On success exactly the specification's ready object; a failed check turns
        ``playground`` to ``"failed"`` and adds ``problems`` (check name -> what went wrong),
        so a broken playground is never reported ready.
        """
        report: dict[str, Any] = {
            "export_requires_explicit_action": True,
            "offline": self.checks.get("page_is_self_contained", False),
            "playground": "ready" if self.passed else "failed",
        }
        if not self.passed:
            failed = {name: "failed" for name, ok in self.checks.items() if not ok}
            report["problems"] = {**failed, **self.problems}
        return report


def run_smoke_checks(port: int, policy_text: str, response_text: str) -> SmokeReport:
    """Check the playground on ``port`` that was started with the given editor texts."""
    client = _Client(port)
    checks: dict[str, Callable[[], str | None]] = {
        "page_is_served": lambda: _check_page_served(client),
        "page_is_self_contained": lambda: _check_self_contained(client),
        "editors_are_prefilled": lambda: _check_prefilled(client, policy_text, response_text),
        "passing_example_passes": lambda: _check_passing_example(client),
        "failing_example_fails": lambda: _check_failing_example(client),
        "malformed_policy_is_refused": lambda: _check_refused(
            client, EXAMPLE_MALFORMED_POLICY, "INVALID_JSON_INPUT"
        ),
        "invalid_policy_is_refused": lambda: _check_refused(
            client, EXAMPLE_INVALID_POLICY, "INVALID_POLICY"
        ),
        "initial_inputs_match_library": lambda: _check_matches_library(
            client, policy_text, response_text
        ),
        "oversized_request_is_refused": lambda: _check_oversized(client),
        "foreign_host_is_refused": lambda: _check_foreign_host(client),
    }
    results: dict[str, bool] = {}
    problems: dict[str, str] = {}
    for name, check in checks.items():
        try:
            problem = check()
        except (OSError, http.client.HTTPException, ValueError) as exc:
            problem = f"request failed: {type(exc).__name__}: {exc}"
        results[name] = problem is None
        if problem is not None:
            problems[name] = problem
    return SmokeReport(results, problems)


class _Client:
    """A tiny HTTP client that talks to 127.0.0.1 directly (never through a proxy)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.host = f"{LOOPBACK}:{port}"

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> _Reply:
        connection = http.client.HTTPConnection(LOOPBACK, self.port, timeout=_TIMEOUT_SECONDS)
        try:
            connection.request(
                method, path, body=body, headers={"Host": self.host, **(headers or {})}
            )
            reply = connection.getresponse()
            return _Reply(reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read())
        finally:
            connection.close()

    def evaluate(self, policy_text: str, response_text: str) -> _Reply:
        body = json.dumps({"policy": policy_text, "response": response_text}).encode("utf-8")
        return self.request("POST", "/evaluate", body, {"Content-Type": "application/json"})


def _check_page_served(client: _Client) -> str | None:
    reply = client.request("GET", "/")
    content_type = reply.headers.get("content-type", "")
    if reply.status != 200 or not content_type.startswith("text/html"):
        return f"GET / answered {reply.status} {content_type!r}, expected 200 text/html"
    page = reply.body.decode("utf-8")
    missing = [marker for marker in _PAGE_IDS if marker not in page]
    return f"the page lacks {', '.join(missing)}" if missing else None


def _check_self_contained(client: _Client) -> str | None:
    reply = client.request("GET", "/")
    references = find_external_references(reply.body.decode("utf-8"))
    if references:
        return f"the page refers to outside resources: {', '.join(references[:5])}"
    if "default-src 'none'" not in reply.headers.get("content-security-policy", ""):
        return "the page is served without a Content-Security-Policy of default-src 'none'"
    return None


def _check_prefilled(client: _Client, policy_text: str, response_text: str) -> str | None:
    page = client.request("GET", "/").body.decode("utf-8")
    for name, text in (("policy", policy_text), ("response", response_text)):
        if html.escape(text, quote=False) not in page:
            return f"the {name} editor does not hold the {name} text the playground started with"
    return None


def _check_passing_example(client: _Client) -> str | None:
    reply = client.evaluate(EXAMPLE_POLICY, EXAMPLE_PASSING_RESPONSE)
    result = reply.json().get("result") if reply.status == 200 else None
    if not isinstance(result, dict) or result.get("passed") is not True:
        return f"expected a passing result, got {reply.status}: {reply.body[:300]!r}"
    return None


def _check_failing_example(client: _Client) -> str | None:
    reply = client.evaluate(EXAMPLE_POLICY, EXAMPLE_FAILING_RESPONSE)
    result = reply.json().get("result") if reply.status == 200 else None
    if not isinstance(result, dict) or result.get("passed") is not False:
        return f"expected a failing result, got {reply.status}: {reply.body[:300]!r}"
    reasons = tuple(rule.get("reason_code") for rule in result.get("rule_results", []))
    if reasons != EXAMPLE_FAILING_REASONS:
        return f"expected reason codes {list(EXAMPLE_FAILING_REASONS)}, got {list(reasons)}"
    return None


def _check_refused(client: _Client, policy_text: str, code: str) -> str | None:
    reply = client.evaluate(policy_text, EXAMPLE_PASSING_RESPONSE)
    error = reply.json().get("error", {})
    if reply.status != 422 or error.get("code") != code:
        return f"expected 422 with error code {code}, got {reply.status}: {reply.body[:300]!r}"
    return None


def _check_matches_library(client: _Client, policy_text: str, response_text: str) -> str | None:
    reply = client.evaluate(policy_text, response_text)
    expected = evaluate_texts(policy_text, response_text)
    if reply.json() != expected:
        return "the server's answer for the starting inputs differs from the library's"
    return None


def _check_oversized(client: _Client) -> str | None:
    body = b" " * (MAX_BODY_BYTES + 1)
    reply = client.request("POST", "/evaluate", body, {"Content-Type": "application/json"})
    if reply.status != 413:
        return f"a {len(body)}-byte request was answered {reply.status}, expected 413"
    return None


def _check_foreign_host(client: _Client) -> str | None:
    reply = client.request("GET", "/", headers={"Host": "playground.invalid"})
    if reply.status != 403:
        return f"a request for another host was answered {reply.status}, expected 403"
    return None
