"""``canon policy``: the JSON policy checker on the command line.

Results are JSON on stdout (sorted keys, 2-space indent, UTF-8, trailing newline). Controlled
errors are ``{"error": {"code", "message", ...}}`` on stderr with exit 2. Completed
evaluations exit 0 even when they fail, unless ``--strict-exit`` asks for 1.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from canon.cli.common import docs_epilog
from canon.cli.policy_io import (
    STDIN,
    PolicyCommandFailure,
    emit_json,
    fail,
    read_input,
    render_json,
)
from canon.errors import ExitCode
from canon.gates.policy.decoding import decode_json_bytes
from canon.gates.policy.errors import (
    INVALID_COMMAND,
    INVALID_DATA,
    JSON_OUTPUT_ERROR,
    PLAYGROUND_UNAVAILABLE,
    PolicyError,
)
from canon.gates.policy.model import Policy
from canon.gates.policy.validation import validate_policy

F = TypeVar("F", bound=Callable[..., Any])


def _usage_failure(exc: click.UsageError) -> PolicyCommandFailure:
    path = exc.ctx.command_path if exc.ctx is not None else "canon policy"
    if type(exc).__name__ == "NoArgsIsHelpError":
        problem = "no subcommand given"
    else:
        problem = exc.format_message().strip()
    message = f"usage error in '{path}': {problem} (run '{path} --help' for usage)"
    return PolicyCommandFailure(PolicyError(INVALID_COMMAND, message))


class _JsonErrorsCommand(click.Command):
    """A command whose usage errors are reported as JSON ``INVALID_COMMAND`` errors."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as exc:
            raise _usage_failure(exc) from None


# the group reports its own usage errors the same way (make_context), and more besides
class _JsonErrorsGroup(_JsonErrorsCommand, click.Group):
    """The ``policy`` group: unknown or missing subcommands are JSON usage errors too."""

    command_class = _JsonErrorsCommand

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            raise _usage_failure(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PolicyError as exc:
            fail(exc)
        except (TypeError, ValueError, RecursionError) as exc:
            # Defensive: anything uncontrolled still leaves as a JSON error, never a traceback.
            fail(PolicyError(INVALID_DATA, f"unexpected data error ({type(exc).__name__}: {exc})"))


def load_json(source: str, what: str) -> Any:
    """Read and strictly decode one JSON input; its errors name the file."""
    named = what if source == STDIN else f"{what} {source}"
    return decode_json_bytes(read_input(source, what), what=named)


def load_policy(source: str) -> Policy:
    """Read, decode and validate a policy file (or stdin for ``-``)."""
    value = load_json(source, "policy")
    try:
        return validate_policy(value)
    except PolicyError as exc:
        if source == STDIN:
            raise
        raise PolicyError(
            exc.code,
            f"{source}: {exc.message}",
            policy_id=exc.policy_id,
            rule_id=exc.rule_id,
            rule_index=exc.rule_index,
        ) from None


def _one_stdin(*sources: str) -> None:
    if sum(source == STDIN for source in sources) > 1:
        fail(
            PolicyError(
                INVALID_COMMAND,
                "only one input can be read from standard input ('-'); pass the other as a file",
            )
        )


def _policy_for_response(policy_file: str, response_file: str) -> Policy:
    """The validated policy of a command that also reads a response (at most one from stdin)."""
    _one_stdin(policy_file, response_file)
    return load_policy(policy_file)


def _policy_and_response(command: F) -> F:
    """Add the POLICY and RESPONSE arguments of the commands that check a response."""
    with_response = click.argument("response_file", metavar="RESPONSE")(command)
    return click.argument("policy_file", metavar="POLICY")(with_response)


_MAX_ORDER_RULES = 7


def _strict_exit(ctx: click.Context, strict: bool, conforms: Any) -> None:
    if strict and conforms is not True:
        ctx.exit(ExitCode.FAILED)


@click.group(
    "policy",
    cls=_JsonErrorsGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=docs_epilog("policy", "gates"),
)
def policy() -> None:
    """Check structured JSON output against a policy (a deterministic pre-judge gate)."""


@policy.command("validate")
@click.argument("policy_file", metavar="POLICY")
def validate_command(policy_file: str) -> None:
    """Validate POLICY and print its identifier and schema version."""
    checked = load_policy(policy_file)
    emit_json({"policy_id": checked.policy_id, "schema_version": "1.0", "valid": True})


@policy.command("evaluate")
@_policy_and_response
@click.option("--strict-exit", is_flag=True, help="Exit 1 when the response fails.")
@click.pass_context
def evaluate_command(
    ctx: click.Context, policy_file: str, response_file: str, strict_exit: bool
) -> None:
    """Evaluate RESPONSE ('-' for stdin) against POLICY and print every rule result."""
    from canon.gates.policy.evaluation import evaluate_response

    checked = _policy_for_response(policy_file, response_file)
    result = evaluate_response(checked, load_json(response_file, "response"))
    emit_json(result.to_json())
    _strict_exit(ctx, strict_exit, result.passed)


@policy.command("check-order")
@_policy_and_response
@click.option("--strict-exit", is_flag=True, help="Exit 1 unless order conformance holds.")
@click.pass_context
def check_order_command(
    ctx: click.Context, policy_file: str, response_file: str, strict_exit: bool
) -> None:
    """Run PrecedenceTrace: evaluate every order of 2-7 rules against RESPONSE."""
    from canon.gates.policy.precedence import check_order_conformance, ensure_order_rule_count

    checked = _policy_for_response(policy_file, response_file)
    if len(checked.rules) > _MAX_ORDER_RULES:
        ensure_order_rule_count(checked)  # refuse to sample 8+ rules: the response is not read
    # the response is decoded as strictly as for evaluate (a duplicate member is
    # INVALID_JSON_INPUT) before the order check looks at the policy's rule count
    response = load_json(response_file, "response")
    report = check_order_conformance(checked, response)
    emit_json(report.to_json())
    _strict_exit(ctx, strict_exit, report.conforms_within_coverage)


@policy.command("explain")
@_policy_and_response
@click.option("--json", "as_json", is_flag=True, help="Print the explanation as JSON.")
def explain_command(policy_file: str, response_file: str, as_json: bool) -> None:
    """Say in plain words why each rule passed or failed for RESPONSE (values are not shown)."""
    from canon.gates.policy.explain import explain_evaluation

    checked = _policy_for_response(policy_file, response_file)
    explanation = explain_evaluation(checked, load_json(response_file, "response"))
    if as_json:
        emit_json(explanation.to_json())
        return
    verdict = "passes" if explanation.passed else "fails"
    lines = [f"policy {explanation.policy_id} {verdict}:"]
    for item in explanation.rules:
        mark = "PASS" if item.result.passed else "FAIL"
        lines.append(
            f"  {mark} {item.result.rule_id} ({item.result.reason_code}): {item.explanation}"
        )
    click.echo("\n".join(lines))


def _same_file(left: str, right: str) -> bool:
    try:
        return os.path.samefile(left, right)
    except OSError:
        return os.path.realpath(left) == os.path.realpath(right)


@policy.command("generate-synthetic")
@click.argument("policy_file", metavar="POLICY")
@click.option("--output", "output", metavar="FILE", help="Write the cases to FILE (atomic).")
def generate_synthetic_command(policy_file: str, output: str | None) -> None:
    """Generate and verify one passing and one failing response for POLICY."""
    from canon.gates.policy.synthetic import generate_synthetic_cases

    if output is not None and (not output.strip() or output == STDIN):
        fail(
            PolicyError(
                INVALID_COMMAND,
                "--output needs a file path (not empty, blank or '-'); omit it to print "
                "to standard output",
            )
        )
    checked = load_policy(policy_file)
    cases = generate_synthetic_cases(checked).to_json()
    if output is None:
        emit_json(cases)
        return
    if policy_file != STDIN and _same_file(output, policy_file):
        fail(
            PolicyError(
                JSON_OUTPUT_ERROR,
                "--output names the policy input file, which would be overwritten; "
                "choose another path",
                policy_id=checked.policy_id,
            )
        )
    try:
        from pathlib import Path

        from canon.project.store import (
            write_bytes_atomic,  # imported late: evaluate must start fast
        )

        write_bytes_atomic(Path(output), render_json(cases))
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        fail(
            PolicyError(
                JSON_OUTPUT_ERROR,
                f"cannot write the output file ({reason}); choose a writable file path",
                policy_id=checked.policy_id,
            )
        )
    emit_json({"output_written": True, "policy_id": checked.policy_id})


@policy.command("playground")
@click.argument("policy_file", metavar="[POLICY]", required=False)
@click.argument("response_file", metavar="[RESPONSE]", required=False)
@click.option("--smoke-test", is_flag=True, help="Check the page headlessly and print a status.")
@click.option("--port", type=int, default=0, show_default=True, help="Port on 127.0.0.1.")
@click.option("--no-browser", is_flag=True, help="Do not open a browser window.")
def playground_command(
    policy_file: str | None,
    response_file: str | None,
    smoke_test: bool,
    port: int,
    no_browser: bool,
) -> None:
    """Open the offline policy playground in a local web page."""
    try:
        module = importlib.import_module("canon.cli.policy_playground")
    except ModuleNotFoundError as exc:
        if exc.name != "canon.cli.policy_playground":
            raise
        fail(
            PolicyError(
                PLAYGROUND_UNAVAILABLE,
                "the playground is not installed in this build; use 'canon policy evaluate'",
            )
        )
    module.run_command(policy_file, response_file, smoke_test, port, no_browser)
