"""``canon policy playground``: serve the offline policy playground, or smoke-test it headlessly."""

from __future__ import annotations

import sys
import webbrowser
from typing import Any

import click

from canon.cli.policy_io import emit_json, fail, read_input
from canon.errors import ExitCode
from canon.gates.policy import (
    Policy,
    PolicyError,
    decode_json_bytes,
    generate_synthetic_cases,
    validate_policy,
)
from canon.playground import PlaygroundServer, run_smoke_checks
from canon.playground.evaluation import format_json
from canon.playground.examples import EXAMPLE_PASSING_RESPONSE, EXAMPLE_POLICY

# When a policy comes without a response and no passing case can be synthesised, the
# response editor starts as an empty object: evaluating it shows which paths are expected.
_EMPTY_RESPONSE = "{}\n"


def run_command(
    policy: str | None, response: str | None, smoke_test: bool, port: int, no_browser: bool
) -> None:
    """Run the playground command; exits 0 (served or smoke ok), 1 (smoke failed), 2 (bad input)."""
    try:
        # the smoke test checks the playground itself: the response file is not read
        policy_text, response_text = _starting_texts(policy, None if smoke_test else response)
        server = PlaygroundServer(policy_text, response_text, port=0 if smoke_test else port)
    except PolicyError as exc:
        fail(exc)
    if smoke_test:
        with server:
            report = run_smoke_checks(server.port, policy_text, response_text)
        emit_json(report.to_dict())
        sys.exit(ExitCode.OK if report.passed else ExitCode.FAILED)
    _serve(server, open_browser=not no_browser)


def _starting_texts(policy: str | None, response: str | None) -> tuple[str, str]:
    """The editor texts: the given files (checked strictly) or the built-in example."""
    validated: Policy | None = None
    if policy is None:
        policy_text = EXAMPLE_POLICY
    else:
        policy_text, policy_value = _read_json_input(policy, "policy")
        # Refuse a policy the playground could only ever report as invalid, as the other
        # policy commands do, before any server starts.
        validated = validate_policy(policy_value)
    if response is not None:
        response_text, _ = _read_json_input(response, "response")
    elif validated is None:
        response_text = EXAMPLE_PASSING_RESPONSE
    else:
        response_text = _synthetic_passing_response(validated)
    return policy_text, response_text


def _synthetic_passing_response(policy: Policy) -> str:
    """A verified passing response for ``policy``, or ``{}`` when none can be built."""
    try:
        cases = generate_synthetic_cases(policy)
    except PolicyError:
        return _EMPTY_RESPONSE
    return format_json(cases.passing_case.response)


def _read_json_input(path: str, what: str) -> tuple[str, Any]:
    """Read a JSON input file (``-`` is stdin); return its text and strictly decoded value."""
    data = read_input(path, what)
    value = decode_json_bytes(data, what=what)
    return data.decode("utf-8"), value


def _serve(server: PlaygroundServer, *, open_browser: bool) -> None:
    """Serve until Ctrl+C, then release the port and return normally."""
    click.echo(f"Canon policy playground: {server.url}")
    click.echo("Press Ctrl+C to stop. Nothing is saved unless you press Export result.")
    if open_browser and not webbrowser.open(server.url):
        click.echo("No browser could be opened; open the address above yourself.")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("Playground stopped.")
    finally:
        server.close()
