"""The ASGI app: ingest and query routes and the dashboard over one engine (Starlette; served
by uvicorn).

Ingest authenticates with a project's ingest key, the query API with a user's API token, both
as ``Authorization: Bearer …``. Database work runs in Starlette's thread pool. The OpenAPI
schema is served at ``/api/v1/openapi.json``, built from the endpoints' docstrings.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import InternalError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.schemas import SchemaGenerator

from hawkwatch.server import admin, queries
from hawkwatch.server.alerts import rules
from hawkwatch.server.auth import bearer
from hawkwatch.server.dashboard import DashboardSettings, dashboard_routes
from hawkwatch.server.ingest import Limits, accept


@dataclass
class ServerSettings:
    limits: Limits = field(default_factory=Limits)
    rate_per_s: float = 50.0
    burst: float = 200.0
    symbols_root: Path | None = None
    dashboard: DashboardSettings = field(default_factory=DashboardSettings)


class RateLimiter:
    """A token bucket per ingest key (per collector process)."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst = rate, burst
        self._buckets: dict[int, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def wait_s(self, key: int, now: float | None = None) -> float:
        """0 when a request may pass now (and takes a token), else seconds until one may."""
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens, last = self._buckets.get(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens >= 1:
                self._buckets[key] = (tokens - 1, now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1 - tokens) / self.rate


log = logging.getLogger("hawkwatch.server")

_SCHEMAS = SchemaGenerator(
    {"openapi": "3.0.0", "info": {"title": "hawkwatch collector", "version": "1"}}
)


async def openapi(request: Request) -> Response:
    return JSONResponse(_SCHEMAS.get_schema(routes=request.app.routes))


async def health(request: Request) -> Response:
    return JSONResponse({"ok": True})


RETRY_AFTER_S = 5


async def database_unavailable(request: Request, exc: Exception) -> Response:
    """The database is down, restarting, full or read-only: 503 with ``Retry-After`` (clients
    retry; the transaction was rolled back, so nothing of the request is stored), not a 500
    traceback. The pool's pre-ping reconnects once the database is back."""
    reason = str(getattr(exc, "orig", exc)).strip().splitlines()
    log.warning("hawkwatch server: database unavailable: %s", reason[0] if reason else exc)
    return _error(503, f"database unavailable: {reason[0][:200] if reason else type(exc).__name__}",
                  **{"Retry-After": str(RETRY_AFTER_S)})  # fmt: skip


def _error(status: int, message: str, **headers: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers or None)


async def _authorized(engine: Engine, request: Request) -> bool:
    token = bearer(request.headers.get("authorization"))
    if token is None:
        return False
    return bool(await run_in_threadpool(admin.token_is_valid, engine, token))


async def _project_of(engine: Engine, request: Request) -> int | JSONResponse:
    name = request.query_params.get("project")
    if not name:
        return _error(400, "name the project: ?project=NAME")
    found = await run_in_threadpool(queries.project_id, engine, name)
    return _error(404, f"no project {name!r}") if found is None else found


async def _one(
    engine: Engine, request: Request, lookup: Any, param: str, what: str
) -> Response:
    """An authorized look-up of one object by its id in the path; 404 when there is none."""
    if not await _authorized(engine, request):
        return _error(401, "missing or unknown API token")
    found = await run_in_threadpool(lookup, engine, int(request.path_params[param]))
    return _error(404, f"no such {what}") if found is None else JSONResponse(found)


async def _per_project(engine: Engine, request: Request, key: str, query: Any) -> Response:
    """An authorized list of one project's objects, as ``{key: [...]}``."""
    if not await _authorized(engine, request):
        return _error(401, "missing or unknown API token")
    project = await _project_of(engine, request)
    if isinstance(project, JSONResponse):
        return project
    return JSONResponse({key: await run_in_threadpool(query, engine, project)})


def _alert_routes(engine: Engine) -> list[Route]:
    """Issue resolution and alert rules (alerts: ``server/alerts/``)."""

    async def resolve_issue(request: Request) -> Response:
        """
        summary: Mark an issue resolved in a release; an occurrence in a later one reopens it.
        requestBody: {content: {application/json: {schema: {type: object, required: [release], properties: {release: {type: string}}}}}}
        responses:
          200: {description: "{id, status, resolved_in_release}"}
          400: {description: no release named}
          404: {description: no such issue}
        """  # noqa: E501
        if not await _authorized(engine, request):
            return _error(401, "missing or unknown API token")
        try:
            body = await request.json()
        except ValueError:
            body = None
        release = body.get("release") if isinstance(body, dict) else None
        if not isinstance(release, str) or not release.strip():
            return _error(400, 'send {"release": "<the release that fixes it>"}')
        found = await run_in_threadpool(
            rules.resolve_issue, engine, int(request.path_params["issue_id"]), release
        )
        return _error(404, "no such issue") if found is None else JSONResponse(found)

    async def list_alerts(request: Request) -> Response:
        """
        summary: A project's alert rules (without their webhook secrets) and recent deliveries.
        parameters:
          - {name: project, in: query, required: true, schema: {type: string}}
        responses:
          200: {description: "{alerts: [{id, rule, metric, limit_pct, min_sessions, window_s, interval_s, webhook_url, email_to}], deliveries: [{id, key, rule_id, channel, type, state, attempts, last_error, created, sent}]}"}
        """  # noqa: E501
        if not await _authorized(engine, request):
            return _error(401, "missing or unknown API token")
        project = await _project_of(engine, request)
        if isinstance(project, JSONResponse):
            return project
        name = request.query_params["project"]
        found = await run_in_threadpool(rules.list_rules, engine, name)
        sent = await run_in_threadpool(rules.recent_deliveries, engine, name)
        return JSONResponse({"alerts": found, "deliveries": sent})

    return [
        Route("/api/v1/issues/{issue_id:int}/resolve", resolve_issue, methods=["POST"]),
        Route("/api/v1/alerts", list_alerts),
    ]


def create_app(engine: Engine, settings: ServerSettings | None = None) -> Starlette:
    settings = settings or ServerSettings()
    limiter = RateLimiter(settings.rate_per_s, settings.burst)

    async def ingest(request: Request) -> Response:
        """
        summary: Upload one session envelope or one iOS artifact.
        description: >
          Body compressed as Content-Encoding says (gzip, zstd or identity). An artifact is named
          in X-Hawkwatch-Artifact. 202 once durably stored; a replayed id is acknowledged again.
        responses:
          202: {description: stored (or a replay)}
          400: {description: malformed; nothing stored}
          401: {description: bad ingest key}
          413: {description: too large}
          429: {description: over the rate limit; see Retry-After}
        """
        key = bearer(request.headers.get("authorization"))
        project = None
        if key is not None:
            project = await run_in_threadpool(admin.project_for_key, engine, key)
        if project is None:
            return _error(401, "missing or unknown ingest key")
        wait = limiter.wait_s(project[0])
        if wait > 0:
            return _error(429, "over the rate limit", **{"Retry-After": str(max(1, round(wait)))})
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > settings.limits.max_body_bytes:
            return _error(413, f"body over {settings.limits.max_body_bytes:,} bytes")
        body = await request.body()
        outcome = await run_in_threadpool(
            accept, engine, project[0], body,
            content_encoding=request.headers.get("content-encoding"),
            artifact_name=request.headers.get("x-hawkwatch-artifact"),
            envelope_id=request.headers.get("x-hawkwatch-envelope-id"),
            limits=settings.limits,
        )  # fmt: skip
        return JSONResponse(outcome.body, status_code=outcome.status)

    async def list_issues(request: Request) -> Response:
        """
        summary: Issues of a project, most frequent first.
        parameters:
          - {name: project, in: query, required: true, schema: {type: string}}
          - {name: kind, in: query, schema: {type: string}}
          - {name: release, in: query, schema: {type: string}}
          - {name: since, in: query, schema: {type: number}}
        responses:
          200: {description: "{issues: [{id, kind, title, culprit, fingerprint, count, sessions, first_seen, last_seen, releases}]}"}
        """  # noqa: E501
        if not await _authorized(engine, request):
            return _error(401, "missing or unknown API token")
        project = await _project_of(engine, request)
        if isinstance(project, JSONResponse):
            return project
        params = request.query_params
        since = params.get("since")
        try:
            since_value = float(since) if since else None
        except ValueError:
            return _error(400, "since must be Unix seconds")
        found = await run_in_threadpool(
            queries.list_issues, engine, project, kind=params.get("kind"),
            release=params.get("release"), since=since_value,
        )  # fmt: skip
        return JSONResponse({"issues": found})

    async def get_issue(request: Request) -> Response:
        """
        summary: One issue with a representative event and its occurrences.
        responses:
          200: {description: the issue}
          404: {description: no such issue}
        """
        return await _one(engine, request, queries.issue_detail, "issue_id", "issue")

    async def list_sessions(request: Request) -> Response:
        """
        summary: Sessions of a project, newest first.
        responses:
          200: {description: "{sessions: [{id, name, app_version, start_time, exit_kind, issue_ids}]}"}
        """  # noqa: E501
        return await _per_project(engine, request, "sessions", queries.list_sessions)

    async def get_session(request: Request) -> Response:
        """
        summary: One session's report, the same JSON as `hawkwatch report --json`.
        responses:
          200: {description: the report}
          404: {description: no such session}
        """
        return await _one(engine, request, queries.session_report, "session_id", "session")

    async def list_releases(request: Request) -> Response:
        """
        summary: Per release of a project, sessions, crash-free and stall rates, launch times.
        responses:
          200: {description: "{releases: [{release, sessions, crash_free_rate, stall_rate, launch_p50_s, launch_p95_s}]}"}
        """  # noqa: E501
        return await _per_project(engine, request, "releases", queries.releases)

    return Starlette(exception_handlers={
        OperationalError: database_unavailable,  # down, restarting, full, locked, read-only
        InternalError: database_unavailable,  # PostgreSQL: read-only transaction (SQLSTATE 25)
        PoolTimeout: database_unavailable,  # every pooled connection busy
    }, routes=[
        Route("/api/v1/ingest", ingest, methods=["POST"]),
        Route("/api/v1/issues", list_issues),
        Route("/api/v1/issues/{issue_id:int}", get_issue),
        *_alert_routes(engine),
        Route("/api/v1/sessions", list_sessions),
        Route("/api/v1/sessions/{session_id:int}", get_session),
        Route("/api/v1/releases", list_releases),
        Route("/api/v1/openapi.json", openapi, include_in_schema=False),
        Route("/healthz", health, include_in_schema=False),
        *dashboard_routes(engine, settings.dashboard),
    ])  # fmt: skip


