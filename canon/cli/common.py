"""What every canon command shares: error handling and the --config option."""

from __future__ import annotations

import functools
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from canon.errors import CanonError, ExitCode, UsageError

F = TypeVar("F", bound=Callable[..., Any])

# `-h` as well as `--help`. Set on every command, not only inherited from the group: click
# caches a command's help option the first time it is built, also when the command is
# invoked on its own (as tests do), without the group's context.
HELP_OPTIONS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}
# Set to any value to print the traceback of an internal error as well.
TRACEBACK_VARIABLE = "CANON_TRACEBACK"
CLOSED_STDOUT_MESSAGE = (
    "standard output is closed, so the result would be lost; redirect it instead "
    "(>/dev/null to discard it, >FILE to keep it) rather than closing it (>&-)"
)
# Exceptions click itself turns into usage messages and exit codes.
_CLICK_FLOW = (click.ClickException, click.exceptions.Exit, click.exceptions.Abort)


def reports_errors(command: F) -> F:
    """Turn a CanonError into one line on stderr and its exit code, never a traceback.

    Any other exception is a bug in Canon: one line naming the command and the exception,
    and exit code 5.
    """

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except CanonError as exc:
            report_canon_error(exc)
        except _CLICK_FLOW:
            raise
        except Exception as exc:  # the last line of defence
            report_internal_error(exc)

    return wrapper  # type: ignore[return-value]


def report_canon_error(exc: CanonError) -> NoReturn:
    """Print a deliberate error as one line and exit with its code."""
    from canon.report.text import printable  # here, so `canon --help` stays light

    click.echo(f"canon: error: {printable(str(exc))}", err=True)
    sys.exit(exc.exit_code)


def require_stdout() -> None:
    """Refuse to run with standard output closed (``>&-``): Python would drop every line."""
    if sys.stdout is None:
        raise UsageError(CLOSED_STDOUT_MESSAGE)


def report_internal_error(exc: BaseException, command: str | None = None) -> NoReturn:
    """Print an unexpected exception as one line (and its traceback on request), exit 5."""
    from canon.report.text import printable

    if command is None:
        context = click.get_current_context(silent=True)
        command = context.command_path if context is not None else "canon"
    detail = printable(" ".join(str(exc).split())[:300])
    if os.environ.get(TRACEBACK_VARIABLE):
        traceback.print_exception(exc, file=sys.stderr)
    click.echo(
        f"canon: internal error in '{command}': {type(exc).__name__}"
        + (f": {detail}" if detail else "")
        + f"; this is a bug in Canon, please report it with the command you ran "
        f"(set {TRACEBACK_VARIABLE}=1 to see the traceback)",
        err=True,
    )
    sys.exit(ExitCode.INTERNAL_ERROR)


config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Use this canon.yaml (or pyproject.toml) instead of searching upward from here.",
)


def docs_epilog(*pages: str) -> str:
    """A --help epilog naming the reference pages in the repository's docs/ folder."""
    listed = ", ".join(f"docs/{page}.md" for page in pages)
    return f"Reference: {listed} (README.md links every page)."


def output_file(value: str | None, option: str = "--output") -> Path | None:
    """The file an ``--output``-style option names; blank text or a directory is refused."""
    if value is None:
        return None
    if not value.strip():
        raise UsageError(
            f"{option} {value!r}: expected a file path; omit {option} to print to standard output"
        )
    path = Path(value)
    if path.is_dir():
        raise UsageError(f"{option} {value}: is a directory; name a file to write")
    return path


def output_directory(value: str, option: str = "--output-dir") -> Path:
    """The directory an ``--output-dir``-style option names; blank text or a file is refused."""
    if not value.strip():
        raise UsageError(f"{option} {value!r}: expected a directory path")
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option} {value}: is not a directory; name a directory to write into")
    return path


def shown_path(path: Path) -> str:
    """A path as the user would type it: relative to here when it is below here."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
