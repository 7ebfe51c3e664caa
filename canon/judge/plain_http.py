"""A minimal keep-alive HTTP/1.1 POST client for plain-http judge endpoints (llama.cpp, vLLM).

At a few hundred judge calls a second the client's CPU decides the run time, and a
general-purpose client spends most of it on machinery a local endpoint never needs: pool
bookkeeping, socket attribute lookups, and a separate send for headers and body (each send
on loopback also pays for the receiving side's TCP work). This one writes each request in
one send over a pooled connection and reads a Content-Length or chunked reply, bounded in
size. HTTPS endpoints and proxied setups use httpx instead (canon.judge.openai_http).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from urllib.parse import urlsplit

# A judge reply is a few kilobytes; anything far larger is not one (and must not be read).
MAX_REPLY_BYTES = 16 * 1024 * 1024
_MAX_HEAD_BYTES = 64 * 1024


class ProtocolFailure(Exception):
    """The server's bytes are not an HTTP/1.1 reply Canon can read."""


@dataclass(frozen=True, slots=True)
class Reply:
    """An HTTP reply: status, lower-cased headers and the body."""

    status: int
    headers: dict[str, str]
    body: bytes


@dataclass(slots=True)
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter


class PlainHTTP:
    """POSTs to one ``http://`` URL over a pool of kept-alive connections (one event loop)."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"PlainHTTP needs an http:// URL, got {url!r}")
        self.host = parts.hostname
        self.port = parts.port or 80
        path = parts.path or "/"
        self.path = f"{path}?{parts.query}" if parts.query else path
        fixed = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        self._head = f"POST {self.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n{fixed}"
        self._idle: list[_Connection] = []

    async def post(self, body: bytes) -> Reply:
        """Send one POST; a kept-alive connection the server had closed is retried once."""
        request = (self._head + f"Content-Length: {len(body)}\r\n\r\n").encode("latin-1") + body
        while True:
            reused = bool(self._idle)
            connection = self._idle.pop() if reused else await self._open()
            try:
                connection.writer.write(request)
                reply, keep = await _read_reply(connection.reader)
            except (ConnectionError, asyncio.IncompleteReadError) as exc:
                connection.writer.close()
                stale = isinstance(exc, ConnectionError) or not exc.partial
                if reused and stale:
                    continue  # the server closed it while idle: nothing was answered
                raise
            except BaseException:  # timed out, cancelled, unreadable: the state is unknown
                connection.writer.close()
                raise
            if keep:
                self._idle.append(connection)
            else:
                connection.writer.close()
            return reply

    async def _open(self) -> _Connection:
        reader, writer = await asyncio.open_connection(self.host, self.port, limit=_MAX_HEAD_BYTES)
        return _Connection(reader, writer)

    def close(self) -> None:
        """Close every idle connection."""
        for connection in self._idle:
            with contextlib.suppress(Exception):
                connection.writer.close()
        self._idle.clear()


async def _read_reply(reader: asyncio.StreamReader) -> tuple[Reply, bool]:
    """One reply and whether the connection may be used again."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError as exc:
        raise ProtocolFailure("the reply's headers are too large") from exc
    lines = head.decode("latin-1").split("\r\n")
    status_line = lines[0].split(" ", 2)
    if (
        len(status_line) < 2
        or not status_line[0].startswith("HTTP/1.")
        or not (status_line[1].isdigit())
    ):
        raise ProtocolFailure(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    keep = status_line[0] == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = await _read_chunked(reader)
    elif "content-length" in headers:
        length = _size(headers["content-length"])
        body = await reader.readexactly(length)
    else:  # no length: the body runs to the end of the connection
        body = await _read_to_end(reader)
        keep = False
    return Reply(int(status_line[1]), headers, body), keep


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size = _size(size_line.split(b";", 1)[0].strip().decode("latin-1"), base=16)
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":
                pass  # trailers, unused
            return b"".join(parts)
        total += size
        if total > MAX_REPLY_BYTES:
            raise ProtocolFailure(f"the reply is larger than {MAX_REPLY_BYTES} bytes")
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)  # the CRLF after each chunk


async def _read_to_end(reader: asyncio.StreamReader) -> bytes:
    data = await reader.read(MAX_REPLY_BYTES + 1)
    while chunk := await reader.read(MAX_REPLY_BYTES + 1 - len(data)):
        data += chunk
        if len(data) > MAX_REPLY_BYTES:
            break
    if len(data) > MAX_REPLY_BYTES:
        raise ProtocolFailure(f"the reply is larger than {MAX_REPLY_BYTES} bytes")
    return data


def _size(text: str, base: int = 10) -> int:
    try:
        size = int(text, base)
    except ValueError:
        raise ProtocolFailure(f"bad length {text[:20]!r} in the reply") from None
    if size < 0 or size > MAX_REPLY_BYTES:
        raise ProtocolFailure(f"the reply's length {size} is outside 0..{MAX_REPLY_BYTES}")
    return size
