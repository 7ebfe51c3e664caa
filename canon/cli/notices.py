"""The judge layer's notices (canon.judge.notices) as lines on stderr.

Every command runs inside ``listening(print_notice)`` (canon.cli), so any command that asks a
judge says when it backs off and why. ``--quiet`` silences the backoff lines, which are
progress; a warning (a request longer than the judge model reads) is printed regardless.
In a rate-limit storm many calls back off at once: one backoff line a second at most is
printed, and the next says how many it stands for.
"""

from __future__ import annotations

import time

import click

from canon.judge.notices import Backoff, ContextOverflow, FailureCause, Notice


def render(notice: Notice) -> str:
    """One line for a notice, without a trailing newline."""
    data = notice.data
    if isinstance(data, Backoff):
        return _backoff(data)
    return _overflow(data)


# Backoff lines at most this often; the ones between are counted into the next line.
BACKOFF_LINE_SECONDS = 1.0


class _Pace:
    """When the last backoff line went out, and how many backoffs were not printed since."""

    last = float("-inf")
    skipped = 0


def print_notice(notice: Notice) -> None:
    """Print ``notice`` to stderr, unless it is progress and the command runs ``--quiet``."""
    if notice.warning:
        click.echo(render(notice), err=True)
        return
    if _quiet():
        return
    now = time.monotonic()
    if now - _Pace.last < BACKOFF_LINE_SECONDS:
        _Pace.skipped += 1
        return
    line = render(notice)
    if _Pace.skipped:
        line += f" ({_Pace.skipped} more call(s) backed off since the last line)"
    _Pace.last, _Pace.skipped = now, 0
    click.echo(line, err=True)


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
