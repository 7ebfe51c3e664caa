"""The judge layer's notices (canon.judge.notices) as lines on stderr.

Every command runs inside ``listening(print_notice)`` (canon.cli), so any command that asks a
judge says when it backs off and why. ``--quiet`` silences the backoff lines, which are
progress; a warning (a request longer than the judge model reads) is printed regardless.
"""

from __future__ import annotations

import click

from canon.judge.notices import Backoff, ContextOverflow, FailureCause, Notice


def render(notice: Notice) -> str:
    """One line for a notice, without a trailing newline."""
    data = notice.data
    if isinstance(data, Backoff):
        return _backoff(data)
    return _overflow(data)


def print_notice(notice: Notice) -> None:
    """Print ``notice`` to stderr, unless it is progress and the command runs ``--quiet``."""
    if notice.warning or not _quiet():
        click.echo(render(notice), err=True)


def _backoff(data: Backoff) -> str:
    what = data.cause.value
    if data.status is not None and data.cause is not FailureCause.TIMEOUT:
        what = f"{what} (HTTP {data.status})"
    return (
        f"canon: judge {data.model}: {what}; waiting {data.wait_s:.1f} s before attempt "
        f"{data.attempt + 1} of {data.attempts}"
    )


def _overflow(data: ContextOverflow) -> str:
    about = "about " if data.approximate else ""
    artifact = f"artifact {data.artifact}" if data.artifact else "a request"
    return (
        f"canon: warning: {artifact} is {about}{data.tokens:,} tokens, more than the "
        f"{data.window:,} judge {data.model} reads; the provider will refuse it or cut it short "
        "(shorten the artifact or choose a judge_model with a larger context window)"
    )


def _quiet() -> bool:
    """Whether the running command (or a group above it) was given ``--quiet``."""
    context = click.get_current_context(silent=True)
    while context is not None:
        if context.params.get("quiet"):
            return True
        context = context.parent
    return False
