"""The dashboard's routes: login and logout, then per project its issues, one issue, one session
and its releases. Every page but ``/login`` wants a login session (else: to ``/login?next=…``);
every POST must repeat the CSRF token of the login it comes from (the login form itself: the
token of a short-lived cookie, the double-submit pattern); 403 otherwise.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from hawkwatch.server import logins, queries
from hawkwatch.server.dashboard import data, render
from hawkwatch.server.dashboard.stacks import problem_time, session_breadcrumbs, stack_view

SESSION_COOKIE: Final = "hawkwatch_session"
LOGIN_COOKIE: Final = "hawkwatch_login_csrf"
RANGES: Final = {"24h": 86400.0, "7d": 7 * 86400.0, "14d": 14 * 86400.0, "30d": 30 * 86400.0}


@dataclass(frozen=True)
class DashboardSettings:
    """``limits``: failed logins allowed per account and per address; ``source_roots``: the
    folders native frames' source lines may be read from (none: lines are not shown)."""

    limits: logins.LoginLimits = field(default_factory=logins.LoginLimits)
    source_roots: tuple[Path, ...] = ()


def safe_next(value: str | None) -> str:
    """A redirect target on this site only: a path, never ``//host`` or a scheme."""
    if not value or not value.startswith("/") or value.startswith(("//", "/\\")):
        return "/"
    parts = urlsplit(value)
    if parts.scheme or parts.netloc or any(c in value for c in "\r\n\t"):
        return "/"
    return value


def _set_cookie(request: Request, response: Response, name: str, value: str, max_age: int) -> None:
    response.set_cookie(
        name, value, max_age=max_age, path="/", httponly=True, samesite="lax",
        secure=request.url.scheme == "https",
    )  # fmt: skip


def _to_login(request: Request) -> Response:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)


async def form_of(request: Request) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body (the only kind our forms send), first value
    of each field; bodies over 64 KiB or of another type read as empty."""
    kind = request.headers.get("content-type", "").split(";")[0].strip()
    body = await request.body()
    if kind != "application/x-www-form-urlencoded" or len(body) > 65536:
        return {}
    try:
        fields = parse_qs(body.decode(), keep_blank_values=True, max_num_fields=50)
    except ValueError:
        return {}
    return {key: values[0] for key, values in fields.items()}


def _client(request: Request) -> str:
    return request.client.host if request.client else "unknown"


Handler = Callable[[Request, logins.Login], Awaitable[Response]]


class Dashboard:
    """The pages over one engine; ``routes()`` lists them for the app."""

    def __init__(self, engine: Engine, settings: DashboardSettings) -> None:
        self.engine, self.settings = engine, settings

    def routes(self) -> list[BaseRoute]:
        guarded = self.logged_in
        return [
            Route("/login", self.login, methods=["GET", "POST"], include_in_schema=False),
            Route("/logout", guarded(self.logout), methods=["GET", "POST"],
                  include_in_schema=False),
            Route("/", guarded(self.home), include_in_schema=False),
            Route("/p/{project}/issues", guarded(self.issue_list), include_in_schema=False),
            Route("/p/{project}/issues/{issue_id:int}", guarded(self.issue),
                  include_in_schema=False),
            Route("/p/{project}/sessions/{session_id:int}", guarded(self.session),
                  include_in_schema=False),
            Route("/p/{project}/releases", guarded(self.releases), include_in_schema=False),
            Route("/static/{name}", static, include_in_schema=False),
            Route("/favicon.ico", favicon, include_in_schema=False),
        ]  # fmt: skip

    def logged_in(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        """``handler`` behind a login (else a redirect to it) and, for a POST, its CSRF token."""

        async def guarded(request: Request) -> Response:
            login = await run_in_threadpool(
                logins.find, self.engine, request.cookies.get(SESSION_COOKIE)
            )
            if login is None:
                return _to_login(request)
            if request.method == "POST":
                given = (await form_of(request)).get("csrf_token")
                if not logins.same_token(login.csrf_token, given):
                    return PlainTextResponse("CSRF token missing or wrong", status_code=403)
            return await handler(request, login)

        return guarded

    async def project_of(self, request: Request) -> tuple[int, str] | Response:
        name = request.path_params["project"]
        found = await run_in_threadpool(queries.project_id, self.engine, name)
        if found is None:
            return render.page("missing.html", 404, what=f"no project {name!r}")
        return found, name

    def login_form(self, request: Request, status: int = 200, error: str | None = None
                   ) -> Response:  # fmt: skip
        token = request.cookies.get(LOGIN_COOKIE) or secrets.token_hex(32)
        response = render.page(
            "login.html", status, csrf_token=token, error=error,
            next=safe_next(request.query_params.get("next")),
        )  # fmt: skip
        _set_cookie(request, response, LOGIN_COOKIE, token, 3600)
        return response

    async def login(self, request: Request) -> Response:
        if request.method == "GET":
            return self.login_form(request)
        form = await form_of(request)
        given, email, password, target = (
            form.get(k, "") for k in ("csrf_token", "email", "password", "next")
        )
        if not logins.same_token(request.cookies.get(LOGIN_COOKIE), given):
            return PlainTextResponse("CSRF token missing or wrong", status_code=403)
        engine, address, limits = self.engine, _client(request), self.settings.limits
        wait = await run_in_threadpool(logins.wait_s, engine, email, address, limits)
        if wait > 0:
            response = self.login_form(request, 429, "Too many failed logins; try again later.")
            response.headers["Retry-After"] = str(max(1, round(wait)))
            return response
        user = await run_in_threadpool(logins.check_user, engine, email, password)
        if user is None:
            await run_in_threadpool(logins.record_failure, engine, email, address, limits)
            return self.login_form(request, 401, "Wrong email or password.")
        await run_in_threadpool(logins.clear_account, engine, email)
        token = await run_in_threadpool(logins.start, engine, user)
        response = RedirectResponse(safe_next(target), status_code=303)
        _set_cookie(request, response, SESSION_COOKIE, token, int(logins.SESSION_S))
        response.delete_cookie(LOGIN_COOKIE, path="/")
        return response

    async def logout(self, request: Request, who: logins.Login) -> Response:
        if request.method == "GET":
            return render.page("logout.html", login=who)
        await run_in_threadpool(logins.end, self.engine, request.cookies.get(SESSION_COOKIE))
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    async def home(self, request: Request, who: logins.Login) -> Response:
        found = await run_in_threadpool(data.projects_overview, self.engine)
        return render.page("projects.html", login=who, projects=found)

    async def issue_list(self, request: Request, who: logins.Login) -> Response:
        project = await self.project_of(request)
        if isinstance(project, Response):
            return project
        params = request.query_params
        chosen = {k: params.get(k) or "" for k in ("kind", "release", "range", "sort", "dir")}
        sort = chosen["sort"] if chosen["sort"] in data.SORTS else "count"
        descending = chosen["dir"] != "asc"
        page_text = params.get("page", "1")
        page_number = int(page_text) if page_text.isdigit() and int(page_text) > 0 else 1
        now = time.time()
        span = RANGES.get(chosen["range"])
        wanted = data.IssueFilter(
            kind=chosen["kind"] or None, release=chosen["release"] or None,
            since=now - span if span else None, sort=sort, descending=descending,
            page=page_number,
        )  # fmt: skip
        found = await run_in_threadpool(data.issue_page, self.engine, project[0], wanted, now=now)
        base = {k: v for k, v in chosen.items() if v and k not in ("sort", "dir")}

        def link(**changes: Any) -> str:
            merged = {**base, "sort": sort, "dir": "desc" if descending else "asc", **changes}
            return "?" + urlencode({k: v for k, v in merged.items() if v})

        def sort_link(column: str) -> str:
            flip = "asc" if column == sort and descending else "desc"
            return link(sort=column, dir=flip, page="")

        pages = max(1, -(-found.total // data.PER_PAGE))
        return render.page(
            "issues.html", login=who, project=project[1], found=found, chosen=chosen,
            sort=sort, descending=descending, page=page_number, pages=pages, link=link,
            sort_link=sort_link, ranges=list(RANGES),
        )  # fmt: skip

    async def issue(self, request: Request, who: logins.Login) -> Response:
        project = await self.project_of(request)
        if isinstance(project, Response):
            return project
        found = await run_in_threadpool(
            data.issue_summary, self.engine, project[0], int(request.path_params["issue_id"])
        )
        if found is None:
            return render.page("missing.html", 404, login=who, what="no such issue")
        issue_row = found["issue"]
        event = found["event"]
        stacks = stack_view(issue_row["kind"], event, found["session_report"],
                            self.settings.source_roots)  # fmt: skip
        crumbs = stacks.breadcrumbs if stacks is not None else []
        if not crumbs and found["latest"]:
            report = found["session_report"]
            when = problem_time(issue_row["kind"], issue_row["culprit"], report,
                                found["latest"][0]["time"])  # fmt: skip
            crumbs = session_breadcrumbs(report, when)
        hours = [(time.strftime("%H", time.gmtime(t)), n) for t, n in found["by_hour"]]
        return render.page(
            "issue.html", login=who, project=project[1], found=found, issue=issue_row,
            event=event, stacks=stacks, hours=hours, breadcrumbs=crumbs,
        )  # fmt: skip

    async def session(self, request: Request, who: logins.Login) -> Response:
        project = await self.project_of(request)
        if isinstance(project, Response):
            return project
        found = await run_in_threadpool(
            data.session_row, self.engine, project[0], int(request.path_params["session_id"])
        )
        if found is None:
            return render.page("missing.html", 404, login=who, what="no such session")
        view, assets = _session_view(found["report"])
        return render.page(
            "session.html", login=who, project=project[1], session=found, view=view,
            assets=assets, report=found["report"],
        )  # fmt: skip

    async def releases(self, request: Request, who: logins.Login) -> Response:
        project = await self.project_of(request)
        if isinstance(project, Response):
            return project
        rows = await run_in_threadpool(data.releases_overview, self.engine, project[0])
        series = {
            "crash_free": [(r["release"], r["crash_free_rate"] * 100) for r in rows],
            "stall": [(r["release"], r["stall_rate"] * 100) for r in rows],
            "launch": [(r["release"], (r["launch_p95_s"] or 0) * 1000) for r in rows],
        }
        return render.page("releases.html", login=who, project=project[1], releases=rows,
                           series=series)  # fmt: skip


async def static(request: Request) -> Response:
    name = request.path_params["name"]
    body = render.static_files().get(name)
    if body is None:
        return PlainTextResponse("not found", status_code=404)
    kind = render.CONTENT_TYPES.get(Path(name).suffix, "application/octet-stream")
    headers = {"Cache-Control": "max-age=3600", "X-Content-Type-Options": "nosniff"}
    return Response(body, media_type=kind, headers=headers)


async def favicon(request: Request) -> Response:
    return Response(render.favicon(), media_type="image/x-icon",
                    headers={"Cache-Control": "max-age=86400"})  # fmt: skip


def dashboard_routes(engine: Engine, settings: DashboardSettings | None = None) -> list[BaseRoute]:
    return Dashboard(engine, settings or DashboardSettings()).routes()


def _session_view(report: dict[str, Any]) -> tuple[str | None, str]:
    """The session view (``hawkwatch.web``) and the tags of the assets it loads; (None, "")
    when that package is not installed."""
    try:
        from hawkwatch.web.assets import asset_tags  # type: ignore[import-not-found,unused-ignore]
        from hawkwatch.web.session_view import (  # type: ignore[import-not-found,unused-ignore]
            render_session_view,
        )
    except ImportError:
        return None, ""
    return str(render_session_view(report)), str(asset_tags("/static/"))
