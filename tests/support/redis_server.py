"""A real redis-server on a free 127.0.0.1 port, in a temporary directory, for one test."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

INSTALL = "apt-get install -y redis-server (.ci/run installs it)"


def missing_reason() -> str | None:
    """Why no redis-server can be started here, or None."""
    if shutil.which("redis-server") is None:
        return f"redis-server is not installed: {INSTALL}"
    try:
        import redis  # noqa: F401
    except ImportError:
        return 'the redis client is not installed: pip install -e ".[test]"'
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_redis(directory: Path, port: int, fsync: str = "always") -> subprocess.Popen[bytes]:
    """A redis-server on ``port`` (append-only file in ``directory``), answering PING."""
    import redis

    directory.mkdir(parents=True, exist_ok=True)
    server = subprocess.Popen(
        [
            "redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory),
            "--save", "", "--appendonly", "yes", "--appendfsync", fsync, "--daemonize", "no",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 20
    while True:
        try:
            redis.Redis(port=port).ping()
            return server
        except redis.RedisError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise RuntimeError("redis-server did not start") from None
            time.sleep(0.05)


@contextmanager
def running_redis(directory: Path, *, fsync: str = "always") -> Iterator[str]:
    """Serve Redis (append-only file, fsync ``fsync``) until the block ends; yields its URL."""
    port = free_port()
    server = start_redis(directory, port, fsync)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=10)
