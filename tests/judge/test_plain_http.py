"""The minimal HTTP/1.1 client against raw TCP servers that answer in each way HTTP allows."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from canon.judge import plain_http
from canon.judge.openai_http import DirectOpenAI, EndpointUnreachable, MalformedReply
from canon.judge.plain_http import PlainHTTP, ProtocolFailure

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
OK = b'{"choices": [{"message": {"content": "ANSWER: yes"}}]}'


async def _request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    return head + await reader.readexactly(length)


def _serve(handler: Handler, scenario: Callable[[str], Awaitable[object]]) -> object:
    async def main() -> object:
        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            return await scenario(f"http://127.0.0.1:{port}/v1/chat/completions")
        finally:
            server.close()

    return asyncio.run(main())


def test_one_send_per_request_over_a_kept_alive_connection():
    seen: list[bytes] = []
    connections = 0

    async def handler(reader, writer):
        nonlocal connections
        connections += 1
        while not reader.at_eof():
            try:
                seen.append(await _request(reader))
            except asyncio.IncompleteReadError:
                break
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(OK), OK))
            await writer.drain()

    async def scenario(url):
        client = PlainHTTP(url, {"Authorization": "Bearer k"})
        return [await client.post(b'{"x": 1}') for _ in range(3)]

    replies = _serve(handler, scenario)
    assert [r.status for r in replies] == [200, 200, 200] and replies[0].body == OK
    assert connections == 1
    assert seen[0].startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    assert b"Authorization: Bearer k\r\n" in seen[0] and seen[0].endswith(b'{"x": 1}')


def test_a_chunked_reply_and_a_reply_that_runs_to_the_close_are_read_whole():
    async def chunked(reader, writer):
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        writer.write(b"5\r\nhello\r\n6;x=1\r\n world\r\n0\r\n\r\n")
        await writer.drain()

    async def to_close(reader, writer):
        await _request(reader)
        writer.write(b"HTTP/1.0 503 Busy\r\n\r\nno room")
        writer.close()

    async def scenario(url):
        return await PlainHTTP(url, {}).post(b"{}")

    assert _serve(chunked, scenario).body == b"hello world"
    reply = _serve(to_close, scenario)
    assert (reply.status, reply.body) == (503, b"no room")


def test_a_stale_kept_alive_connection_is_replaced_once():
    calls = 0

    async def handler(reader, writer):
        nonlocal calls
        calls += 1
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()  # without saying Connection: close

    async def scenario(url):
        client = PlainHTTP(url, {})
        first = await client.post(b"{}")
        await asyncio.sleep(0.05)
        return first, await client.post(b"{}")

    first, second = _serve(handler, scenario)
    assert first.body == second.body == b"ok" and calls == 2


@pytest.mark.parametrize(
    "raw, problem",
    [
        (b"SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP/1.x status line"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -4\r\n\r\n", "outside"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n", "outside"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad length"),
    ],
)
def test_an_unreadable_or_oversized_reply_is_refused_not_read(raw, problem):
    async def handler(reader, writer):
        await _request(reader)
        writer.write(raw)
        await writer.drain()

    async def scenario(url):
        with pytest.raises(ProtocolFailure, match=problem):
            await PlainHTTP(url, {}).post(b"{}")

    _serve(handler, scenario)


def test_a_reply_past_the_size_limit_is_refused(monkeypatch):
    monkeypatch.setattr(plain_http, "MAX_REPLY_BYTES", 1000)

    async def handler(reader, writer):
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 5000)
        writer.close()

    async def scenario(url):
        with pytest.raises(ProtocolFailure, match="larger than 1000 bytes"):
            await PlainHTTP(url, {}).post(b"{}")

    _serve(handler, scenario)


def test_the_direct_client_maps_transport_failures_to_its_errors():
    async def garbage(reader, writer):
        await _request(reader)
        writer.write(b"garbage\r\n\r\n")
        await writer.drain()

    async def cut_short(reader, writer):
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{")
        writer.close()

    def scenario(error):
        async def run(url):
            client = DirectOpenAI(url.removesuffix("/chat/completions"), None, timeout=5)
            assert client.plain
            with pytest.raises(error):
                await client.complete({"messages": []})

        return run

    _serve(garbage, scenario(MalformedReply))
    _serve(cut_short, scenario(EndpointUnreachable))


def test_a_proxy_in_the_environment_sends_plain_http_through_httpx(monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    assert not DirectOpenAI("http://127.0.0.1:1/v1", None, timeout=5).plain
    assert not DirectOpenAI("https://api.example.com/v1", None, timeout=5).plain
