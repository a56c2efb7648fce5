"""Fixtures shared by the plugin tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.agent.plugins.net_servers import HttpServer


@pytest.fixture(scope="module")
def server() -> Iterator[HttpServer]:
    """A plain HTTP/1.1 server on loopback, one per test module (the network tests' target)."""
    with HttpServer() as running:
        yield running
