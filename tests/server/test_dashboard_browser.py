"""The dashboard in headless Chromium (Playwright), over a project seeded through the real path:
three apps run under the agent in two releases, an iOS crash report built from real arm64
binaries whose dSYMs are in the server's symbol store, all uploaded and processed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from hawkwatch.server.app import ServerSettings
from hawkwatch.server.dashboard import DashboardSettings
from hawkwatch.server.database import make_engine, migrate
from hawkwatch.server.logins import LoginLimits
from hawkwatch.symbols.store import SymbolStore
from tests.server.dashboard_world import EMAIL, PASSWORD, World, run_apps, seed, serving
from tests.symbols.debug_files import build
from tests.symbols.reports import ips

if TYPE_CHECKING:
    from playwright.sync_api import Page, Response

    from tests.pages import WatchedPage

LIMITS = LoginLimits(per_account=3, per_address=50)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    folder = tmp_path_factory.mktemp("dashboard")
    built = build(tmp_path_factory.mktemp("debug-files"))
    symbols = folder / "symbols"
    SymbolStore(symbols).add([built.app_dsym, built.lib_dsym])
    home = folder / "home"
    home.mkdir()
    run_apps(home)
    report = folder / "symbolicate-me.ips"
    report.write_text(ips(built))
    engine = make_engine(f"sqlite:///{folder / 'server.db'}")
    migrate(engine)
    settings = ServerSettings(
        rate_per_s=1000, burst=1000, symbols_root=symbols,
        dashboard=DashboardSettings(limits=LIMITS, source_roots=(built.folder,)),
    )  # fmt: skip
    with serving(engine, settings) as url:
        yield seed(engine, url, home, [report], symbols)
    engine.dispose()


def log_in(page: Page, url: str, email: str = EMAIL, password: str = PASSWORD) -> Response | None:
    page.goto(f"{url}/login")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", password)
    with page.expect_navigation() as navigation:
        page.click("form.login button[type=submit]")
    return navigation.value


def rows(page: Page) -> list[str]:
    return page.locator("table.issues tbody tr").all_inner_texts()


def test_log_in_see_issues_filter_by_release_and_open_a_crash(
    page: WatchedPage, world: World
) -> None:
    p = page.page
    p.goto(f"{world.url}/p/shop/issues")
    assert p.url.startswith(f"{world.url}/login?next=")  # no login yet: sent to the form
    p.fill("input[name=email]", EMAIL)
    p.fill("input[name=password]", PASSWORD)
    with p.expect_navigation():
        p.click("form.login button[type=submit]")
    assert p.url == f"{world.url}/p/shop/issues"
    listed = rows(p)
    assert len(listed) == 3, listed
    assert any("stalled in block_the_loop" in r for r in listed)
    assert any("ended by SIGSEGV" in r for r in listed)
    assert any("EXC_BAD_ACCESS" in r for r in listed)
    assert p.locator("table.issues svg.spark").count() == 3

    p.select_option("select[name=release]", "2.0")
    with p.expect_navigation():
        p.click("form.filters button[type=submit]")
    assert "release=2.0" in p.url
    (only,) = rows(p)
    assert "ended by SIGSEGV" in only
    p.select_option("select[name=release]", "1.0")
    with p.expect_navigation():
        p.click("form.filters button[type=submit]")
    (only,) = rows(p)
    assert "stalled in block_the_loop" in only
    options = p.locator("select[name=release] option").all_inner_texts()
    assert options == ["all", "1.0", "1.0 (1)", "2.0"]  # the iOS report's version (build)

    p.select_option("select[name=release]", "1.0 (1)")
    with p.expect_navigation():
        p.click("form.filters button[type=submit]")
    with p.expect_navigation():
        p.click("table.issues a.title:has-text('EXC_BAD_ACCESS')")
    assert re.search(r"/p/shop/issues/\d+$", p.url)
    crashed = p.locator("details.thread").first
    frames = crashed.locator("ol.frames li")
    first = frames.first.inner_text()
    assert "hawk::deep" in first and "crashlib.cpp:" in first
    source = frames.first.locator("pre.src").inner_text()  # the line read from the sources
    assert source == "*p = v * 3;  // @deep-store"
    assert "crash_here" in crashed.inner_text()
    assert p.locator("section.charts svg.bars").count() == 2
    assert page.errors == [] and page.foreign_requests(world.url) == []


def test_a_session_page_shows_the_session(page: WatchedPage, world: World) -> None:
    p = page.page
    log_in(p, world.url)
    p.goto(f"{world.url}/p/shop/issues?kind=stall")
    with p.expect_navigation():
        p.click("table.issues a.title")
    assert "time.sleep(0.8)" in p.locator("pre.src").inner_text()  # the blocking line
    crumbs = p.locator("section:has(h2:text('Breadcrumbs')) tbody").inner_text()
    assert "checkout started" in crumbs and '{"cart":3}' in crumbs.replace(" ", "")
    with p.expect_navigation():
        p.click("a:has-text('session ')")
    assert re.search(r"/p/shop/sessions/\d+$", p.url)
    assert "stalled in block_the_loop" in p.locator("main").inner_text()  # its issues, linked
    # the session view (hawkwatch.web): timeline and flame graph drawn by the served script
    for view in ("timeline", "flame"):
        drawn = p.locator(f"svg[data-hw-drawn='{view}']")
        drawn.wait_for()
        box = drawn.bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 20, view
    frames = p.locator("svg[data-hw-drawn='flame'] g.hw-frame title").all_text_contents()
    assert any("price_the_cart" in title for title in frames)
    assert p.locator("[data-hw-figure='stall-count']").get_attribute("data-value") == "1"
    served = {url.rsplit("/", 1)[-1] for url in page.requests if "/static/" in url}
    assert {"session.js", "session.css", "dashboard.css"} <= served
    assert page.errors == [] and page.foreign_requests(world.url) == []


def test_releases_are_compared(page: WatchedPage, world: World) -> None:
    p = page.page
    log_in(p, world.url)
    p.goto(f"{world.url}/p/shop/releases")
    table = p.locator("table.releases tbody tr").all_inner_texts()
    assert len(table) == 2
    one, two = (re.split(r"\t", row) for row in table)
    assert one[:4] == ["1.0", "2", "100.0 %", "50.0 %"]
    assert two[:4] == ["2.0", "1", "0.0 %", "0.0 %"]
    assert p.locator("section.charts svg.bars").count() == 3
    assert page.errors == []


def test_wrong_password_logout_and_the_rate_limit(page: WatchedPage, world: World) -> None:
    p = page.page
    refused = log_in(p, world.url, password="wrong horse battery")
    assert refused is not None and refused.status == 401
    assert "Wrong email or password" in p.locator("p.error").inner_text()
    assert p.context.cookies() == [] or all(
        c["name"] != "hawkwatch_session" for c in p.context.cookies()
    )
    done = log_in(p, world.url)
    assert done is not None and p.url == f"{world.url}/"
    assert "shop" in p.locator("table.grid").inner_text()
    with p.expect_navigation():
        p.click("form.logout button")
    assert p.url == f"{world.url}/login"
    p.goto(f"{world.url}/p/shop/releases")
    assert p.url == f"{world.url}/login?next=%2Fp%2Fshop%2Freleases"

    statuses = [
        getattr(log_in(p, world.url, "locked@example.test", "guess number one"), "status", None)
        for _ in range(LIMITS.per_account + 1)
    ]
    assert statuses == [401] * LIMITS.per_account + [429]
    assert "Too many failed logins" in p.locator("p.error").inner_text()


def test_a_form_without_its_csrf_token_is_refused(page: WatchedPage, world: World) -> None:
    p = page.page
    log_in(p, world.url)
    p.goto(f"{world.url}/")
    p.evaluate("document.querySelector('form.logout input[name=csrf_token]').remove()")
    with p.expect_navigation() as navigation:
        p.click("form.logout button")
    assert navigation.value is not None and navigation.value.status == 403
    p.goto(f"{world.url}/p/shop/issues")
    assert p.url == f"{world.url}/p/shop/issues"  # still logged in: nothing happened
