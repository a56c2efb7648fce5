"""Fixtures shared by every test: an isolated hawkwatch home, a stopped agent afterwards, and a
browser for tests of pages."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from playwright.sync_api import Browser

    from tests.pages import WatchedPage

# A property test is judged on the values it finds, never on how fast an example ran: a busy CI
# machine stretches single examples past Hypothesis's default 200 ms deadline.
settings.register_profile("hawkwatch", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("hawkwatch")


def _is_ours(name: str) -> bool:
    return name.startswith(("HAWKWATCH_", "_HAWKWATCH_"))


def pytest_configure(config: pytest.Config) -> None:
    """No HAWKWATCH_* variable of the developer's shell (or test.sh's HAWKWATCH_TEST_PYTHONS)
    reaches a fixture of any scope: module-scoped ones are set up before the autouse below."""
    for name in [name for name in os.environ if _is_ours(name)]:
        del os.environ[name]


@pytest.fixture(autouse=True)
def _clean_hawkwatch_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nor one a test before this one left behind."""
    for name in [name for name in os.environ if _is_ours(name)]:
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


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """One headless Chromium (Playwright) for the whole run; each test opens its own context."""
    from tests.pages import launched_browser

    with launched_browser() as launched:
        yield launched


@pytest.fixture
def page(browser: Browser) -> Iterator[WatchedPage]:
    """A fresh, watched page: console errors, page errors and requests are kept on it."""
    from tests.pages import watched_page

    with watched_page(browser) as watched:
        yield watched
