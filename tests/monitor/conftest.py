"""Fixtures for the live-traffic tests: a real redis-server for each test that asks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.redis_server import missing_reason, running_redis


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """The URL of a redis-server started for this test (or a skip naming the install)."""
    reason = missing_reason()
    if reason is not None:
        pytest.skip(reason)
    with running_redis(tmp_path / "redis") as url:
        yield url
