"""What the policy commands and the playground share: JSON output, controlled errors, input."""

from __future__ import annotations

import json
import os
import stat
import sys
from typing import IO, Any, NoReturn

import click

from canon.errors import ExitCode
from canon.gates.policy.decoding import MAX_INPUT_BYTES
from canon.gates.policy.errors import PolicyError

STDIN = "-"


def render_json(document: Any) -> bytes:
    """The project's JSON output format as UTF-8 bytes."""
    text = json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
    return (text + "\n").encode("utf-8")


def emit_json(document: Any, stream: str = "stdout") -> None:
    """Write one JSON document to stdout or stderr as raw UTF-8 bytes."""
    text_stream = sys.stdout if stream == "stdout" else sys.stderr
    text_stream.flush()
    try:
        text_stream.buffer.write(render_json(document))
        text_stream.buffer.flush()
    except BrokenPipeError:
        if stream != "stdout":
            raise
        # The reader went away (`| head`): as for every command (cli.output), the rest is
        # dropped and the command keeps its own exit code.
        from canon.cli.output import drop_stdout

        drop_stdout()


class PolicyCommandFailure(click.ClickException):
    """A controlled failure: its JSON error document goes to stderr and the exit code is 2."""

    exit_code = ExitCode.USAGE_ERROR

    def __init__(self, error: PolicyError) -> None:
        super().__init__(error.message)
        self.error = error

    def show(self, file: IO[Any] | None = None) -> None:
        """Print the JSON error document instead of click's plain-text message."""
        emit_json(self.error.to_json(), "stderr")


def fail(error: PolicyError) -> NoReturn:
    """Stop the command with a controlled JSON error."""
    raise PolicyCommandFailure(error)


def read_input(source: str, what: str) -> bytes:
    """The raw bytes of a file, or of stdin for ``-``, reading at most one byte past the limit."""
    if source == STDIN:
        return sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    try:
        # Only a regular file: a FIFO would block the command, a device never end.
        if not stat.S_ISREG(os.stat(source).st_mode):
            raise PolicyError(
                "INVALID_JSON_INPUT",
                f"the {what} file {source} is not a regular file; pass a JSON file or - for stdin",
            )
        with open(source, "rb") as handle:
            return handle.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise PolicyError(
            "INVALID_JSON_INPUT",
            f"cannot read the {what} file ({reason}); check the path and permissions",
        ) from None
