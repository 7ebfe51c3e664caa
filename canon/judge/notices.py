"""What the judge layer tells a person while it works: coded notices to a listener.

A model judge waits out rate limits and outages for tens of seconds, and an artifact can be
longer than the judge model reads. The judge layer never prints: it emits a ``Notice`` (a kind
and its data) to the listener installed around the work with ``listening(callback)``; the
CLI's listener renders each to stderr (canon.cli.notices). Without a listener notices are
dropped. The listener lives in a contextvar, so every task the work starts inherits it.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass


class NoticeKind(enum.Enum):
    """What a notice reports."""

    BACKOFF = "backoff"  # a call failed in a way a retry may fix: waiting before the next
    CONTEXT_OVERFLOW = "context_overflow"  # a request is longer than the model's window


class FailureCause(enum.Enum):
    """Why a judge call failed in a way a retry may fix."""

    RATE_LIMITED = "rate limited"  # 429
    OVERLOADED = "overloaded"  # 503, 529
    SERVER_ERROR = "server error"  # other 5xx, 408, 409
    TIMEOUT = "timeout"  # no reply within the judge's timeout
    UNREACHABLE = "unreachable"  # refused or dropped connection
    MALFORMED = "malformed reply"  # a reply that is not a chat completion
    UNREADABLE = "unreadable answer"  # a reply naming no offered choice


@dataclass(frozen=True, slots=True)
class Backoff:
    """A failed call and the wait before attempt ``attempt + 1`` of ``attempts``."""

    model: str
    cause: FailureCause
    status: int | None  # the HTTP status, when the endpoint answered
    wait_s: float
    attempt: int  # the attempt that failed (1-based)
    attempts: int  # the question's attempt budget


@dataclass(frozen=True, slots=True)
class ContextOverflow:
    """A request of ``tokens`` prompt tokens for a model that reads at most ``window``."""

    model: str
    tokens: int
    window: int
    artifact: str | None  # the artifact's key, when known
    approximate: bool = False  # ``tokens`` estimated from the length, not counted


@dataclass(frozen=True, slots=True)
class Notice:
    """One thing the judge layer reports: its kind and that kind's data."""

    kind: NoticeKind
    data: Backoff | ContextOverflow

    @property
    def warning(self) -> bool:
        """A warning is shown even when progress is silenced (``--quiet``)."""
        return self.kind is NoticeKind.CONTEXT_OVERFLOW


Listener = Callable[[Notice], None]

_listener: ContextVar[Listener | None] = ContextVar("canon_notice_listener", default=None)


@contextlib.contextmanager
def listening(callback: Listener) -> Iterator[None]:
    """Send the judge layer's notices to ``callback`` inside the block (and its tasks)."""
    token = _listener.set(callback)
    try:
        yield
    finally:
        _listener.reset(token)


def emit(notice: Notice) -> None:
    """Hand ``notice`` to the installed listener, if any."""
    callback = _listener.get()
    if callback is not None:
        callback(notice)


def backoff(
    model: str,
    cause: FailureCause,
    status: int | None,
    wait_s: float,
    attempt: int,
    attempts: int,
) -> None:
    """Emit a BACKOFF notice."""
    emit(Notice(NoticeKind.BACKOFF, Backoff(model, cause, status, wait_s, attempt, attempts)))


def context_overflow(
    model: str, tokens: int, window: int, artifact: str | None, approximate: bool = False
) -> None:
    """Emit a CONTEXT_OVERFLOW notice."""
    data = ContextOverflow(model, tokens, window, artifact, approximate)
    emit(Notice(NoticeKind.CONTEXT_OVERFLOW, data))
