"""Sending one decision call, with Canon's own retries, backoff and concurrency limiter.

Direct HTTP through canon.judge.openai_http's pooled transport rather than ``typesafe-sdk``
or the ``openai`` SDK's ``decisions`` resource: both SDKs retry on their own schedule (Canon's
limiter must hear of every 429 and timeout, and its retry budget is the run's), typesafe-sdk
compresses bodies that compatible servers cannot read and rejects a whole response over one
malformed field, and Canon must check every answer from the raw JSON anyway.

Failures, by what can fix them:

- 401/403: the key (``JudgeCredentialError`` naming its variable, exit 2); 404: the API root
  or the model (exit 2); 400, 413, 422 and other client errors: the request as sent
  (``JudgeRejectedError`` with the server's message, exit 2);
- 408, 409, 429, 529 and 5xx, timeouts and refused connections: retried with backoff,
  honouring ``retry-after-ms`` and ``Retry-After``, then ``JudgeUnavailableError`` (exit 3);
- a body that is not the wire's envelope: retried, then ``JudgeError`` (every question of
  the call unscored);
- a bad answer to one question: that question's problem in the result (never a pass).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any

from canon.core.usage import Usage
from canon.errors import (
    JudgeCredentialError,
    JudgeError,
    JudgeRejectedError,
    JudgeUnavailableError,
    UsageError,
)
from canon.judge.concurrency import current_limiter
from canon.judge.decisions.asking import AskedQuestion, compact
from canon.judge.decisions.prices import input_price
from canon.judge.decisions.validate import DecisionResult, Unreadable, parse_body
from canon.judge.decisions.wires import WIRES, Wire
from canon.judge.failures import Failure
from canon.judge.litellm_module import JudgeSetupError
from canon.judge.openai_http import DirectOpenAI, EndpointUnreachable, MalformedReply
from canon.judge.usage import CallGuard

# Statuses a retry may fix; the first four also mean "send fewer calls".
_OVERLOAD = (429, 503, 529)
_RETRY = (408, 409)
_MESSAGE_LIMIT = 300
# A root ending in one of these already names the endpoint: it is used as given.
_ENDPOINTS = ("/systemone", "/decisions")


class Endpoint(DirectOpenAI):
    """POSTs JSON to one wire URL over Canon's pooled transport (plain http or httpx)."""

    def __init__(self, url: str, api_key: str | None, timeout: float) -> None:
        super().__init__(url, api_key, timeout)
        self.url = url  # the wire's own endpoint, not a chat completions path
        self.base_url = url

    async def post(self, body: Mapping[str, Any]) -> tuple[int, Mapping[str, str], bytes]:
        """One POST: the status, headers and body; raises on no reply or a broken one."""
        content = compact(body).encode("utf-8")
        self._renew()
        if self.plain:
            return await self._post_plain(content)
        return await self._post_httpx(content)


class DecisionClient:
    """Asks one decision model every question about a response in one call."""

    def __init__(
        self,
        wire: str,
        model: str,
        *,
        api_key: str | None = None,
        root: str | None = None,
        timeout: float = 10.0,
        max_attempts: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 20.0,
    ) -> None:
        if wire not in WIRES:
            raise UsageError(f"unknown decision wire {wire!r}; known: {', '.join(sorted(WIRES))}")
        if not isinstance(model, str) or not model.strip():
            raise UsageError(f"a {wire} judge needs a model name, got {model!r}")
        self.wire: Wire = WIRES[wire]
        self.model = model.strip()
        self.timeout = float(timeout)
        self.max_attempts = max(1, int(max_attempts))
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self._explicit_key = api_key is not None
        key = api_key if api_key is not None else os.environ.get(self.wire.key_variable)
        given_root = root or os.environ.get(self.wire.root_variable)
        if not key and given_root is None:
            # The hosted API always wants a key; a server of one's own may not.
            raise self._credential_error("no key is set")
        self.url = endpoint_url(given_root or self.wire.default_root, self.wire.path)
        self._endpoint = Endpoint(self.url, key or None, self.timeout)
        # A refused key stays refused for the run: later calls fail without a request.
        self._refusal: JudgeCredentialError | None = None
        self._pace = Pace(self.wire.per_minute) if self.wire.per_minute else None

    @property
    def alias(self) -> bool:
        """Whether the model name moves with releases (``jev-latest``): the answers may
        change with no change here, so the answering model must be recorded and pinned."""
        return self.model in self.wire.aliases

    @property
    def name(self) -> str:
        """The judge as configured: ``wire:model``."""
        return f"{self.wire.name}:{self.model}"

    async def decide(
        self,
        state: Mapping[str, Any],
        asked: Sequence[AskedQuestion],
        guard: CallGuard | None = None,
    ) -> DecisionResult:
        """One call asking every question in ``asked`` about ``state``; ``guard`` (a run's
        budget) is asked before every attempt and told what each one cost."""
        if self._refusal is not None:
            raise JudgeCredentialError(str(self._refusal))
        body = self.wire.build(self.model, state, asked)
        guess = input_price(self.model, self.wire.tokens(body)) if guard is not None else None
        limiter = current_limiter()
        failure = Failure("transient", "no attempt was made")
        unread = 0  # replies that came but could not be read: billed, at an unknown cost
        for attempt in range(1, self.max_attempts + 1):
            started = time.monotonic()
            if self._pace is not None:
                await self._pace.wait()  # never faster than the wire's published rate
            # Every attempt reserves its cost first, so a budget is crossed by one call at most.
            reserved = guard.reserve_cost(guess) if guard is not None else 0.0
            result: DecisionResult | None = None
            replied = True
            try:
                result, failure, unread = await self._attempt(body, asked, failure, unread)
            except (TimeoutError, EndpointUnreachable) as exc:
                replied = False
                failure = (
                    Failure(
                        "transient", f"timed out: no reply within {self.timeout:g} s", overload=True
                    )
                    if isinstance(exc, TimeoutError)
                    else Failure("transient", str(exc))
                )
            finally:
                if guard is not None:
                    spent = result.usage if result is not None else Usage(calls=1, cost=None)
                    guard.book(reserved, spent if replied else None)
            if result is not None:
                if limiter is not None:
                    limiter.succeeded(started, self.timeout)
                return result
            if failure.kind == "transient" and limiter is not None:
                if failure.overload:
                    limiter.overloaded(started, failure.retry_after)
                limiter.failed(outage_window=2.0 * self.timeout)
            if attempt < self.max_attempts:
                delay = self._delay(attempt, failure.retry_after)
                await (limiter.pause(delay) if limiter is not None else asyncio.sleep(delay))
        raise self._gave_up(failure, unread)

    async def _attempt(
        self, body: Mapping[str, Any], asked: Sequence[AskedQuestion], failure: Failure, unread: int
    ) -> tuple[DecisionResult | None, Failure, int]:
        """One POST: the result, or why there is none (and the unreadable replies so far).
        A timeout or a refused connection raises; so does what only a changed setting fixes."""
        try:
            async with asyncio.timeout(self.timeout + 1.0):  # a backstop for the transport
                status, headers, content = await self._endpoint.post(body)
        except MalformedReply as exc:
            return None, Failure("malformed", f"an unreadable reply ({exc})"), unread + 1
        if status >= 400:
            return None, self._status_failure(status, headers, content), unread
        try:
            reply = self.wire.read(parse_body(content), asked)
        except Unreadable as exc:
            return None, Failure("malformed", f"an unreadable reply: {exc}"), unread + 1
        usage = self._usage(reply.model, reply.input_tokens, reply.output_tokens, unread)
        return DecisionResult(reply.model, self.model, reply.outcomes, usage), failure, unread

    def _usage(self, answered_by: str, input_tokens: int, output_tokens: int, unread: int) -> Usage:
        price = input_price(answered_by, input_tokens)
        if price is None:
            price = input_price(self.model, input_tokens)
        return Usage(
            calls=1 + unread,
            prompt_tokens=input_tokens,
            completion_tokens=output_tokens,  # reported, never charged
            cost=None if unread else price,
        )

    def _gave_up(self, failure: Failure, unread: int) -> JudgeError:
        attempts = f"after {self.max_attempts} attempt(s)"
        error: JudgeError
        if failure.kind == "transient":
            error = JudgeUnavailableError(
                f"judge {self.name} is unavailable {attempts}: {failure.detail}; check the "
                "network and the provider's status, then run again (CI may simply retry)"
            )
        else:
            error = JudgeError(f"judge {self.name}, {attempts}: {failure.detail}")
        error.usage = Usage(calls=unread, cost=None if unread else 0.0)
        return error

    def _status_failure(self, status: int, headers: Mapping[str, str], content: bytes) -> Failure:
        """What a retry may fix; raises what only a changed setting can."""
        detail = f"HTTP {status}: {server_message(content)}"
        if status in (401, 403):
            self._refusal = self._credential_error(f"{self.url} refused the credentials ({detail})")
            raise self._refusal
        if status == 404:
            raise JudgeSetupError(
                f"judge {self.name}: {self.url} answered {detail}; check "
                f"{self.wire.root_variable} (the API root; {self.wire.path} is appended) and "
                "the model name"
            )
        if status in _RETRY or status in _OVERLOAD or status >= 500:
            return Failure("transient", detail, retry_after(headers), status in _OVERLOAD)
        raise JudgeRejectedError(
            f"judge {self.name} rejected the request ({detail}); a retry sends the same "
            "request, so check the model name and the server's message"
        )

    def _credential_error(self, what: str) -> JudgeCredentialError:
        advice = (
            "check the api_key given to the judge"
            if self._explicit_key
            else f"set {self.wire.key_variable} to a valid key (in the environment or a .env "
            "next to canon.yaml)"
        )
        return JudgeCredentialError(f"judge {self.wire.name}:{self.model}: {what}; {advice}")

    def _delay(self, attempt: int, after: float | None) -> float:
        delay = min(self.backoff * 2.0 ** (attempt - 1), self.max_backoff)
        delay *= 1.0 + 0.25 * random.random()
        return max(delay, after) if after is not None else delay


class Pace:
    """Spaces calls so they never exceed ``per_minute`` on average: each call takes the next
    slot, 60 / per_minute seconds after the previous one (a burst of one slot is allowed)."""

    def __init__(self, per_minute: int) -> None:
        self.interval = 60.0 / per_minute
        self._next = 0.0

    async def wait(self) -> None:
        """Wait for this call's slot."""
        now = time.monotonic()
        slot = max(now, self._next)
        self._next = slot + self.interval
        if slot > now:
            await asyncio.sleep(slot - now)


def endpoint_url(root: str, path: str) -> str:
    """The URL a call goes to: the API root with the wire's path appended, or the root as
    given when it already names an endpoint (OpenRouter's ``…/api/alpha/decisions``)."""
    root = root.rstrip("/")
    return root if root.endswith(_ENDPOINTS) else root + path


def retry_after(headers: Mapping[str, str]) -> float | None:
    """How long the server asks us to wait: ``retry-after-ms``, then ``Retry-After`` seconds."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is not None:
            try:
                return max(0.0, float(value) / scale)
            except ValueError:  # an HTTP date: our own backoff instead
                continue
    return None


def server_message(content: bytes) -> str:
    """The server's own words from an error body, in any of the shapes servers use."""
    try:
        data: Any = json.loads(content)
    except ValueError:
        data = None
    message = _message(data) if data is not None else None
    text = message if message else content.decode("utf-8", "replace") or "no detail"
    text = " ".join(text.split())
    return text[: _MESSAGE_LIMIT - 1] + "…" if len(text) > _MESSAGE_LIMIT else text


def _message(data: Any) -> str | None:
    """FastAPI ``detail`` (a list of {loc, msg} or {error_type, message}), OpenAI's
    ``error`` envelope, a top-level ``message``, or plain text."""
    if isinstance(data, str):
        return data
    if isinstance(data, list):
        parts = [_location(item) for item in data if isinstance(item, Mapping)]
        return "; ".join(part for part in parts if part) or None
    if not isinstance(data, Mapping):
        return None
    for key in ("detail", "error"):
        if key in data:
            return _message(data[key])
    message = data.get("message")
    return str(message) if message is not None else None


def _location(item: Mapping[str, Any]) -> str:
    message = str(item.get("msg") or item.get("message") or "")
    loc = item.get("loc")
    if isinstance(loc, list) and loc:
        return f"{'.'.join(str(part) for part in loc)}: {message}"
    return message
