"""``jevcompat mock`` (a third-party reference server of the System One wire) in this process,
on a free 127.0.0.1 port, keeping the body of every request it answers.

jevcompat counts the POSTs it receives (``config.requests``) but keeps no bodies; a test that
checks what Canon asked in each call needs them, so its ``respond`` is wrapped for the block.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from jevcompat import mock as jevmock


@dataclass
class RunningJev:
    """A running mock: its root URL, its config (``config.requests`` counts every POST) and
    the bodies it answered with a 200, in order."""

    url: str
    config: jevmock.MockConfig
    bodies: list[dict[str, Any]] = field(default_factory=list)


@contextmanager
def running_jevcompat(**options: Any) -> Iterator[RunningJev]:
    """jevcompat's mock with ``MockConfig(**options)`` (key, faults, busy_every, …)."""
    config = jevmock.MockConfig(**options)
    server = jevmock.make_server(config)
    running = RunningJev(f"http://127.0.0.1:{server.server_address[1]}", config)
    respond = jevmock.respond

    def recording(cfg: jevmock.MockConfig, body: dict[str, Any]) -> dict[str, Any]:
        if cfg is config:
            running.bodies.append(body)
        reply: dict[str, Any] = respond(cfg, body)
        return reply

    jevmock.respond = recording  # the handler looks it up per request
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield running
    finally:
        jevmock.respond = respond
        server.shutdown()
        server.server_close()
