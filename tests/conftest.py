"""Fixtures shared by every test: an isolated hawkwatch home, and a stopped agent afterwards."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _clean_hawkwatch_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No HAWKWATCH_* variable of the developer's shell leaks into a test."""
    for name in list(os.environ):
        if name.startswith(("HAWKWATCH_", "_HAWKWATCH_")):
            monkeypatch.delenv(name)


@pytest.fixture
def hawkwatch_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``HAWKWATCH_HOME`` pointing into the test's own folder; returns the sessions root."""
    home = tmp_path / "hawkwatch-home"
    monkeypatch.setenv("HAWKWATCH_HOME", str(home))
    monkeypatch.chdir(tmp_path)  # no hawkwatch.toml of the repository is picked up
    return home / "sessions"


@pytest.fixture
def stopped_agent() -> Iterator[None]:
    """Stop the in-process agent after the test, whatever happened."""
    import hawkwatch

    yield
    hawkwatch.stop()
