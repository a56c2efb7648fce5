"""Fixtures of the session view's tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A HAWKWATCH_HOME of its own, so the user's sessions are never read."""
    folder = tmp_path / "home"
    folder.mkdir()
    return folder
