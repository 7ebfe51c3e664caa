"""Fixtures for the playground tests: a live playground server.

The headless browser (``chromium``, ``page``) comes from tests/chromium_plugin.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from canon.playground import PlaygroundServer
from canon.playground.examples import EXAMPLE_PASSING_RESPONSE, EXAMPLE_POLICY


@pytest.fixture
def example_server() -> Iterator[PlaygroundServer]:
    """A playground on a free loopback port, opened on the built-in example."""
    with PlaygroundServer(EXAMPLE_POLICY, EXAMPLE_PASSING_RESPONSE) as server:
        yield server
