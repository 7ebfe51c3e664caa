"""What a test's canon run talks to: an environment without OpenTelemetry, a port nobody serves."""

from __future__ import annotations

import os
import socket


def closed_port() -> int:
    """A 127.0.0.1 port that was free a moment ago, so nothing listens on it now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def without_otel(**extra: str) -> dict[str, str]:
    """This process's environment minus every OTEL_* and CANON_OTEL* variable, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "CANON_OTEL"))}
    env.update(extra)
    return env
