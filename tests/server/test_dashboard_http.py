"""The dashboard over plain HTTP, on SQLite and PostgreSQL: login, CSRF, the login rate limit,
redirects, escaping, and the pages' figures for uploads the pipeline processed."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine

from hawkwatch.server import admin
from hawkwatch.server.app import ServerSettings, create_app
from hawkwatch.server.dashboard import DashboardSettings, data
from hawkwatch.server.dashboard.routes import SESSION_COOKIE, safe_next
from hawkwatch.server.logins import LoginLimits
from tests.server.dashboard_world import (
    EMAIL,
    FIXTURES,
    PASSWORD,
    SCRIPT_TITLE,
    crash_report,
    csrf_of,
    login,
    script_titled_crash,
    seed,
    serving,
)

LIMITS = LoginLimits(per_account=3, per_address=6, window_s=900)


@pytest.fixture
def url(engine: Engine) -> Iterator[str]:
    settings = ServerSettings(rate_per_s=1000, burst=1000,
                              dashboard=DashboardSettings(limits=LIMITS))  # fmt: skip
    with serving(engine, settings) as base:
        yield base


@pytest.fixture
def client(url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=url, timeout=30) as made:
        yield made


def test_pages_redirect_to_the_login_with_a_same_site_next(engine: Engine, client: httpx.Client
                                                          ) -> None:  # fmt: skip
    admin.add_project(engine, "shop")
    admin.add_user(engine, EMAIL, PASSWORD)
    for path in ("/", "/p/shop/issues?kind=stall", "/p/shop/issues/1", "/p/shop/sessions/1",
                 "/p/shop/releases", "/logout"):  # fmt: skip
        answer = client.get(path)
        assert answer.status_code == 303, path
        assert answer.headers["location"].startswith("/login?next=%2F"), path
    answer = client.get("/p/shop/issues?kind=stall")
    assert answer.headers["location"] == "/login?next=%2Fp%2Fshop%2Fissues%3Fkind%3Dstall"
    done = login(client, next_="/p/shop/issues?kind=stall")
    assert done.status_code == 303 and done.headers["location"] == "/p/shop/issues?kind=stall"
    client.cookies.clear()
    assert login(client, next_="//evil.example/x").headers["location"] == "/"
    assert [safe_next(v) for v in ("https://evil.example/", "/\\evil", "/ok?a=1", None)] == [
        "/", "/", "/ok?a=1", "/"
    ]


def test_login_sets_a_strict_cookie_and_a_wrong_password_is_refused(
    engine: Engine, client: httpx.Client
) -> None:
    admin.add_project(engine, "shop")
    admin.add_user(engine, EMAIL, PASSWORD)
    wrong = login(client, password="not the password")
    assert wrong.status_code == 401 and "Wrong email or password" in wrong.text
    assert SESSION_COOKIE not in client.cookies
    assert client.get("/p/shop/issues").status_code == 303
    unknown = login(client, email="nobody@example.test")
    assert unknown.status_code == 401

    right = login(client)
    assert right.status_code == 303
    cookie = next(v for k, v in right.headers.multi_items()
                  if k == "set-cookie" and v.startswith(SESSION_COOKIE))  # fmt: skip
    attributes = {part.strip().lower() for part in cookie.split(";")}
    assert {"httponly", "samesite=lax", "path=/"} <= attributes
    assert "secure" not in attributes  # plain http on loopback
    page = client.get("/p/shop/issues")
    assert page.status_code == 200 and "Issues" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]


def test_every_post_needs_the_csrf_token_of_its_login(engine: Engine, client: httpx.Client,
                                                      url: str) -> None:  # fmt: skip
    admin.add_user(engine, EMAIL, PASSWORD)
    form = client.get("/login")
    # the login form: no token, or a token that is not this browser's cookie → 403
    no_token = client.post("/login", data={"email": EMAIL, "password": PASSWORD})
    assert no_token.status_code == 403
    with httpx.Client(base_url=url) as other:
        forged = other.post("/login", data={"csrf_token": csrf_of(form.text), "email": EMAIL,
                                            "password": PASSWORD})  # fmt: skip
        assert forged.status_code == 403
    assert login(client).status_code == 303
    home = client.get("/")
    token = csrf_of(home.text)
    assert client.post("/logout", data={}).status_code == 403
    assert client.post("/logout", data={"csrf_token": "x" * len(token)}).status_code == 403
    assert client.get("/").status_code == 200  # still logged in
    stolen_cookie = client.cookies[SESSION_COOKIE]
    out = client.post("/logout", data={"csrf_token": token})
    assert out.status_code == 303 and out.headers["location"] == "/login"
    assert client.get("/").status_code == 303
    client.cookies.set(SESSION_COOKIE, stolen_cookie)  # the old cookie means nothing now
    assert client.get("/").status_code == 303


def test_the_login_rate_limit_answers_429_per_account_and_per_address(
    engine: Engine, client: httpx.Client
) -> None:
    admin.add_user(engine, EMAIL, PASSWORD)
    admin.add_user(engine, "other@example.test", PASSWORD)
    for _ in range(LIMITS.per_account):
        assert login(client, password="wrong password").status_code == 401
    locked = login(client)  # even the right password waits now
    assert locked.status_code == 429 and int(locked.headers["retry-after"]) > 0
    assert SESSION_COOKIE not in client.cookies
    # another account from the same address still may, until the address's limit
    assert login(client, email="other@example.test").status_code == 303
    client.cookies.clear()
    for _ in range(LIMITS.per_address - LIMITS.per_account):
        assert login(client, email="other@example.test", password="nope nope").status_code == 401
    assert login(client, email="other@example.test").status_code == 429


def test_the_session_cookie_is_secure_over_https(engine: Engine) -> None:
    admin.add_user(engine, EMAIL, PASSWORD)
    app = create_app(engine)

    async def log_in() -> str:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="https://dash.test") as c:
            form = await c.get("/login")
            done = await c.post("/login", data={"csrf_token": csrf_of(form.text),
                                                "email": EMAIL, "password": PASSWORD})  # fmt: skip
            return next(v for k, v in done.headers.multi_items()
                        if k == "set-cookie" and v.startswith(SESSION_COOKIE))  # fmt: skip

    # in a thread of its own: Playwright's sync API may hold this thread's event loop
    with ThreadPoolExecutor(1) as pool:
        cookie = pool.submit(lambda: asyncio.run(log_in())).result()
    assert "secure" in {part.strip().lower() for part in cookie.split(";")}


def test_markup_in_an_issue_title_is_shown_as_text(engine: Engine, client: httpx.Client,
                                                   url: str, tmp_path: Path) -> None:  # fmt: skip
    world = seed(engine, url, None, [script_titled_crash(tmp_path),
                                     FIXTURES / "ips" / "nullderef.ips"])  # fmt: skip
    assert login(client).status_code == 303
    listing = client.get(f"/p/{world.project}/issues")
    assert listing.status_code == 200
    assert SCRIPT_TITLE not in listing.text
    assert "&lt;script&gt;alert(&#34;hawk&#34;)&lt;/script&gt;" in listing.text
    issue_id = re.search(r'href="/p/shop/issues/(\d+)">[^<]*&lt;script', listing.text)
    assert issue_id is not None
    detail = client.get(f"/p/shop/issues/{issue_id.group(1)}")
    assert detail.status_code == 200
    assert SCRIPT_TITLE not in detail.text and "&lt;script&gt;" in detail.text


def test_unknown_projects_issues_and_sessions_are_404(engine: Engine, client: httpx.Client,
                                                      url: str) -> None:  # fmt: skip
    seed(engine, url, None, [FIXTURES / "ips" / "nullderef.ips"])
    admin.add_project(engine, "other")
    assert login(client).status_code == 303
    listing = client.get("/p/shop/issues").text
    (issue_id,) = set(re.findall(r'href="/p/shop/issues/(\d+)"', listing))
    assert client.get(f"/p/shop/issues/{issue_id}").status_code == 200
    assert client.get(f"/p/other/issues/{issue_id}").status_code == 404  # not that project's
    assert client.get("/p/nothing/issues").status_code == 404
    assert client.get("/p/shop/sessions/999").status_code == 404
    assert client.get("/favicon.ico").content[:4] == b"\x00\x00\x01\x00"
    assert client.get("/static/dashboard.css").headers["content-type"].startswith("text/css")
    assert client.get("/static/../app.py").status_code == 404


def test_the_issue_list_sorts_pages_and_filters_by_time(
    engine: Engine, client: httpx.Client, url: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setattr(data, "PER_PAGE", 4)
    now = time.time()
    names = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"]  # ~n days ago
    reports = [crash_report(tmp_path, name, when=now - n * 86400 + 300, name=f"{name}.ips")
               for n, name in enumerate(names)]  # fmt: skip
    reports.append(crash_report(tmp_path, "delta", when=now - 3 * 86400 - 60, name="d2.ips"))
    reports.append(crash_report(tmp_path, "zulu", when=now - 20 * 86400, name="zulu.ips"))
    seed(engine, url, None, reports)
    assert login(client).status_code == 303

    def titles(query: str) -> list[str]:
        page = client.get(f"/p/shop/issues?{query}")
        assert page.status_code == 200
        found = re.findall(r'class="title" href="[^"]+">([^<]+)</a>', page.text)
        return [title.removeprefix("EXC_BAD_ACCESS (SIGSEGV): ") for title in found]

    assert titles("")[0] == "delta"  # by events: the one seen twice first
    assert titles("sort=title&dir=asc") == ["alpha", "bravo", "charlie", "delta"]
    assert titles("sort=title&dir=asc&page=2") == ["echo", "foxtrot", "golf", "zulu"]
    assert titles("sort=title&dir=desc") == ["zulu", "golf", "foxtrot", "echo"]
    assert titles("sort=title&dir=asc&page=3") == []
    assert titles("sort=last_seen&dir=desc")[:2] == ["alpha", "bravo"]
    last_week = titles("range=7d&sort=title&dir=asc") + titles("range=7d&sort=title&dir=asc&page=2")
    assert last_week == names
    assert titles("range=24h&sort=title&dir=asc") == ["alpha", "bravo"]  # whole UTC days
    page = client.get("/p/shop/issues?sort=title&dir=asc").text
    assert "8 issues" in page and "page 1 of 2" in page
    assert 'href="?sort=title&amp;dir=asc&amp;page=2"' in page
    # the sparkline of "delta": two events three days ago, none since
    spark = re.search(r'aria-label="(\d+) in the last 14 days"', client.get("/p/shop/issues").text)
    assert spark is not None and spark.group(1) == "2"
