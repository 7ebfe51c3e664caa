"""A direct call path for OpenAI-compatible chat endpoints (llama.cpp, vLLM, ...).

litellm spends most of a judge call's client CPU on dispatch: building its parameter
mapping, logging hooks and a pydantic response object. An OpenAI-compatible endpoint needs
none of that, so for ``openai/...`` models pointed at such an endpoint the judge posts the
JSON itself: over canon.judge.plain_http for a plain-http endpoint, else through one pooled
httpx client (httpx already comes with litellm). Every other provider still goes through
litellm.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from typing import Any

import httpx

from canon.judge.plain_http import PlainHTTP, ProtocolFailure

_LIMITS = httpx.Limits(max_connections=256, max_keepalive_connections=256)
_PROXY_VARIABLES = ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


class EndpointError(Exception):
    """The endpoint answered with an HTTP error status."""

    def __init__(self, status: int, message: str, retry_after: float | None = None) -> None:
        super().__init__(status, message)
        self.status = status
        self.message = message
        self.retry_after = retry_after

    def __str__(self) -> str:
        return f"HTTP {self.status}: {self.message}"


class EndpointUnreachable(Exception):
    """The endpoint could not be reached, or dropped the connection."""


class MalformedReply(Exception):
    """The endpoint's reply is not the JSON a chat completion is."""


class DirectOpenAI:
    """POSTs chat completions to ``base_url``, keeping connections alive per event loop.

    A plain ``http://`` endpoint (a local server) gets canon.judge.plain_http's one-send
    client; HTTPS, or any proxy set in the environment, gets httpx.
    """

    def __init__(self, base_url: str, api_key: str | None, timeout: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self.timeout = timeout
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        proxied = any(os.environ.get(name) for name in _PROXY_VARIABLES)
        self.plain = self.url.startswith("http://") and not proxied
        # Connections belong to the event loop that opened them; run_sync may use a fresh
        # loop per call, so the clients are rebuilt when the loop changes.
        self._client: httpx.AsyncClient | None = None
        self._plain: PlainHTTP | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _renew(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._client = self._plain = None
            self._loop = loop

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """One chat completion as the endpoint's JSON; raises the errors above or TimeoutError."""
        content = json.dumps(body, ensure_ascii=False).encode("utf-8")
        self._renew()
        if self.plain:
            status, headers, data = await self._post_plain(content)
        else:
            status, headers, data = await self._post_httpx(content)
        if status >= 400:
            raise EndpointError(status, _error_message(data), _retry_after(headers))
        try:
            parsed = json.loads(data)
        except ValueError as exc:
            raise MalformedReply(f"the reply is not JSON ({exc})") from exc
        if not isinstance(parsed, dict) or not isinstance(parsed.get("choices"), list):
            raise MalformedReply("the reply has no 'choices' list")
        return parsed

    async def _post_plain(self, content: bytes) -> tuple[int, Mapping[str, str], bytes]:
        if self._plain is None:
            self._plain = PlainHTTP(self.url, self._headers)
        try:
            async with asyncio.timeout(self.timeout):
                reply = await self._plain.post(content)
        except ProtocolFailure as exc:
            raise MalformedReply(str(exc)) from exc
        except TimeoutError:
            raise  # an OSError too, but it means no reply in time, not no connection
        except (OSError, asyncio.IncompleteReadError) as exc:  # refused, reset, cut short
            raise EndpointUnreachable(f"could not reach {self.base_url} ({exc!r})") from exc
        return reply.status, reply.headers, reply.body

    async def _post_httpx(self, content: bytes) -> tuple[int, Mapping[str, str], bytes]:
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout), limits=_LIMITS, headers=self._headers
            )
        try:
            response = await self._client.post(self.url, content=content)
        except httpx.TimeoutException as exc:
            raise TimeoutError(str(exc) or "timed out") from exc
        except httpx.HTTPError as exc:  # refused, reset, protocol errors
            raise EndpointUnreachable(f"could not reach {self.base_url} ({exc!r})") from exc
        return response.status_code, response.headers, response.content


def _error_message(content: bytes) -> str:
    try:
        data = json.loads(content)
    except ValueError:
        data = None
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    text = str(message) if message else content.decode("utf-8", "replace") or "no detail"
    text = " ".join(text.split())
    return text[:199] + "…" if len(text) > 200 else text


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:  # an HTTP date: fall back to our own backoff
        return None
