"""A direct httpx call path for OpenAI-compatible chat endpoints (llama.cpp, vLLM, ...).

litellm spends most of a judge call's client CPU on dispatch: building its parameter
mapping, logging hooks and a pydantic response object. An OpenAI-compatible endpoint needs
none of that, so for ``openai/...`` models pointed at such an endpoint the judge posts the
JSON itself through one pooled httpx client (httpx already comes with litellm). Every other
provider still goes through litellm.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

_LIMITS = httpx.Limits(max_connections=256, max_keepalive_connections=256)


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
    """POSTs chat completions to ``base_url`` with one keep-alive httpx client per loop."""

    def __init__(self, base_url: str, api_key: str | None, timeout: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self.timeout = timeout
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        # A client is bound to the event loop that opened its connections; run_sync may use
        # a fresh loop per call, so the client is rebuilt when the loop changes.
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _session(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout), limits=_LIMITS, headers=self._headers
            )
            self._loop = loop
        return self._client

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """One chat completion as the endpoint's JSON; raises the errors above or TimeoutError."""
        content = json.dumps(body, ensure_ascii=False).encode("utf-8")
        try:
            response = await self._session().post(self.url, content=content)
        except httpx.TimeoutException as exc:
            raise TimeoutError(str(exc) or "timed out") from exc
        except httpx.HTTPError as exc:  # refused, reset, protocol errors
            raise EndpointUnreachable(f"could not reach {self.base_url} ({exc!r})") from exc
        if response.status_code >= 400:
            raise EndpointError(
                response.status_code, _error_message(response), _retry_after(response)
            )
        try:
            data = json.loads(response.content)
        except ValueError as exc:
            raise MalformedReply(f"the reply is not JSON ({exc})") from exc
        if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
            raise MalformedReply("the reply has no 'choices' list")
        return data


def _error_message(response: httpx.Response) -> str:
    try:
        data = json.loads(response.content)
    except ValueError:
        data = None
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    text = str(message) if message else response.text or response.reason_phrase
    text = " ".join(text.split())
    return text[:199] + "…" if len(text) > 200 else text


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:  # an HTTP date: fall back to our own backoff
        return None
