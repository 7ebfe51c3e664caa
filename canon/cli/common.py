"""What every canon command shares: error handling and the --config option."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from canon.errors import CanonError

F = TypeVar("F", bound=Callable[..., Any])

# `-h` as well as `--help`. Set on every command, not only inherited from the group: click
# caches a command's help option the first time it is built, also when the command is
# invoked on its own (as tests do), without the group's context.
HELP_OPTIONS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}


def reports_errors(command: F) -> F:
    """Turn a CanonError into one line on stderr and its exit code, never a traceback."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except CanonError as exc:
            click.echo(f"canon: error: {exc}", err=True)
            sys.exit(exc.exit_code)

    return wrapper  # type: ignore[return-value]


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


def shown_path(path: Path) -> str:
    """A path as the user would type it: relative to here when it is below here."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
