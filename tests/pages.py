"""Playwright driving Debian's Chromium, for tests of pages: the dashboard and the HTML report.

Every page a test opens is watched: console errors, uncaught page errors and every request the
page made are kept on ``WatchedPage``, so a test can assert that a page rendered with no error
and fetched nothing from outside the server it came from. Playwright's own browser download is
never used (no network in CI); it launches ``chromium`` from ``tests.browser``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from tests.browser import CHROMIUM_FLAGS, chromium

if TYPE_CHECKING:
    from playwright.sync_api import Browser, ConsoleMessage, Page, Request


@dataclass
class WatchedPage:
    """A Playwright page and what it did: console errors, page errors, requested URLs."""

    page: Page
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        return self.console_errors + self.page_errors

    def foreign_requests(self, origin: str) -> list[str]:
        """Requests to anywhere but ``origin`` (scheme://host:port); data: URLs are local."""
        allowed = urlsplit(origin)
        return [
            url
            for url in self.requests
            if not url.startswith(("data:", "blob:", "about:"))
            and (urlsplit(url).scheme, urlsplit(url).netloc) != (allowed.scheme, allowed.netloc)
        ]


@contextmanager
def launched_browser() -> Iterator[Browser]:
    """Debian's headless Chromium under Playwright; closed when the block ends."""
    from playwright.sync_api import sync_playwright

    executable = chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable,
            args=[flag for flag in CHROMIUM_FLAGS if flag != "--headless"] + ["--disable-quic"],
            headless=True,
        )
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def watched_page(browser: Browser) -> Iterator[WatchedPage]:
    """A fresh context (no cookies shared between tests) with one watched page."""
    context = browser.new_context()
    watched = WatchedPage(context.new_page())

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            watched.console_errors.append(message.text)

    def on_request(request: Request) -> None:
        watched.requests.append(request.url)

    watched.page.on("console", on_console)
    watched.page.on("pageerror", lambda error: watched.page_errors.append(str(error)))
    watched.page.on("request", on_request)
    try:
        yield watched
    finally:
        context.close()
