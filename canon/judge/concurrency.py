"""How many judge calls a run keeps in flight: an adaptive limit and an outage breaker.

One ``AdaptiveLimiter`` serves a whole run: the runner and the confirmation re-asks hold a
slot per question (``async with limiter``), and the model judge reports what each HTTP call
taught it through ``current_limiter()``.

The limit starts at 1 and doubles per round trip while replies come back quickly (TCP's
slow start), so a one-slot local server is never handed more requests than it can answer
inside the timeout. It halves on a 429, a 503, a timeout or a reply slower than a quarter
of the timeout (a sign of queueing at the server), and then grows back by one per round
trip, always within ``[1, maximum]``. A Retry-After holds every new call until it passes.

The breaker trips when the judge keeps failing (timeouts, refused connections, 5xx) with no
success for ``outage_window`` seconds: every call still waiting, and every later one, then
fails at once as unavailable, so an outage costs a bounded time rather than one timeout per
question.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from contextvars import ContextVar
from types import TracebackType

from canon.errors import JudgeUnavailableError

# Replies slower than this share of the timeout mean the server is queueing our requests.
SLOW_SHARE = 0.25
# A tripped breaker needs at least this many failures in a row, however long they took.
TRIP_FAILURES = 3

_current: ContextVar[AdaptiveLimiter | None] = ContextVar("canon_limiter", default=None)


def current_limiter() -> AdaptiveLimiter | None:
    """The limiter whose slot the running task holds, if any."""
    return _current.get()


class AdaptiveLimiter:
    """An async context manager like a semaphore whose size follows the endpoint."""

    def __init__(self, maximum: int, *, initial: int = 1) -> None:
        self.maximum = max(1, int(maximum))
        self.limit = float(min(self.maximum, max(1, initial)))
        self.in_flight = 0
        self.peak = 0  # the most calls ever in flight at once (for tests and benchmarks)
        self.shrinks = 0
        self._slow_start = True
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._hold_until = 0.0
        self._last_shrink = 0.0
        self._failures = 0  # consecutive failures since the last success
        self._last_success: float | None = None
        self._tripped: str | None = None

    def __repr__(self) -> str:
        return f"AdaptiveLimiter(limit={self.limit:.1f}, maximum={self.maximum})"

    @property
    def tripped(self) -> str | None:
        """Why the breaker tripped, or None while the judge may still be asked."""
        return self._tripped

    async def __aenter__(self) -> AdaptiveLimiter:
        await self.acquire()
        _current.set(self)  # each task runs in its own context copy: no one else sees it
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        _current.set(None)
        self.release()

    async def acquire(self) -> None:
        """Wait for a free slot (and for any Retry-After hold); raise once the breaker trips."""
        if self._last_success is None:
            self._last_success = time.monotonic()  # the outage clock starts with the run
        self._raise_if_tripped()
        if self.in_flight < int(self.limit) and not self._waiters:
            self.in_flight += 1
        else:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(future)
            try:
                await future  # _wake hands the slot over: in_flight already counts it
            except asyncio.CancelledError:
                if future.done() and not future.cancelled() and future.exception() is None:
                    self.release()  # woken, then cancelled: pass the slot on
                else:
                    with contextlib.suppress(ValueError):
                        self._waiters.remove(future)
                raise
        self.peak = max(self.peak, self.in_flight)
        try:  # a Retry-After holds the call, slot and all, until it passes
            while (wait := self._hold_until - time.monotonic()) > 0:
                await asyncio.sleep(wait)
            self._raise_if_tripped()
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        """Give a slot back and wake the next waiter when the limit allows."""
        self.in_flight -= 1
        self._wake()

    async def pause(self, delay: float) -> None:
        """Sleep between retries without holding a slot, then queue for one again."""
        self.release()
        try:
            await asyncio.sleep(max(delay, self._hold_until - time.monotonic(), 0.0))
        finally:
            await self.acquire()

    def succeeded(self, started: float, timeout: float) -> None:
        """A call sent at ``started`` (monotonic) answered: grow, or shrink if it was queued."""
        now = time.monotonic()
        self._failures = 0
        self._last_success = now
        if now - started > SLOW_SHARE * timeout:
            self._shrink(started)
            return
        step = 1.0 if self._slow_start else 1.0 / self.limit
        self.limit = min(float(self.maximum), self.limit + step)
        self._wake()

    def overloaded(self, started: float, retry_after: float | None = None) -> None:
        """A call sent at ``started`` met a 429, 503 or timeout: shrink, hold for Retry-After."""
        if retry_after:
            self._hold_until = max(self._hold_until, time.monotonic() + retry_after)
        self._shrink(started)

    def failed(self, outage_window: float, detail: str | None = None) -> None:
        """A call failed in a way an outage would (timeout, refused connection, 5xx).

        ``detail`` says how (``timed out: no reply within 30 s``); the last one is named
        when the breaker trips.
        """
        self._failures += 1
        since = time.monotonic() - (self._last_success or time.monotonic())
        if self._failures >= TRIP_FAILURES and since >= outage_window:
            last = f" (the last: {detail})" if detail else ""
            self.trip(
                f"the judge failed {self._failures} calls in a row{last} and answered none "
                f"for {since:.0f} s"
            )

    def trip(self, reason: str) -> None:
        """Open the breaker: every waiting and later call fails as unavailable."""
        if self._tripped is None:
            self._tripped = reason
        while self._waiters:
            future = self._waiters.popleft()
            if not future.done():
                future.set_exception(self._stopped())

    def _shrink(self, started: float) -> None:
        self._slow_start = False
        # A call sent before the last shrink reports congestion the shrink already answered;
        # counting it too would halve the limit once per call in flight.
        if started < self._last_shrink:
            return
        self._last_shrink = time.monotonic()
        self.shrinks += 1
        self.limit = max(1.0, self.limit / 2.0)

    def _wake(self) -> None:
        # Oldest first, handing each woken waiter its slot, so no newcomer can take it.
        while self._waiters and self.in_flight < int(self.limit):
            future = self._waiters.popleft()
            if not future.done():
                self.in_flight += 1
                future.set_result(None)

    def _raise_if_tripped(self) -> None:
        if self._tripped is not None:
            raise self._stopped()

    def _stopped(self) -> JudgeUnavailableError:
        return JudgeUnavailableError(
            f"judge calls stopped: {self._tripped}; check the endpoint, then run again"
        )
