"""A Starlette service with an unbounded cache: the third-party app of the memory leak report.

``GET /profile/{user}`` renders a user's profile page and memoizes it in ``RENDERED``, keyed by
user and query string, and never evicts: every new user (or tracking parameter) adds a page for
the life of the process. ``GET /search`` allocates as much per request and keeps nothing (churn).
Run it under hawkwatch with ``benchmarks/third_party_leak.py``, or by hand:
``hawkwatch run --memory -- python -m uvicorn starlette_cache_service:app --port 8765``.
"""

from __future__ import annotations

import json

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

RENDERED: dict[str, str] = {}


def render_profile(user: str, query: str) -> str:
    """The page: a few KB of HTML built from the user's (made-up) activity."""
    rows = "".join(
        f"<tr><td>{user}</td><td>event {i}</td><td>{i * 37 % 1000}</td></tr>" for i in range(40)
    )
    return f"<html><body><h1>{user}</h1><p>{query}</p><table>{rows}</table></body></html>"


async def profile(request: Request) -> HTMLResponse:
    user = request.path_params["user"]
    key = f"{user}?{request.url.query}"
    page = RENDERED.get(key)
    if page is None:
        page = RENDERED[key] = render_profile(user, request.url.query)
    return HTMLResponse(page)


async def search(request: Request) -> JSONResponse:
    term = request.query_params.get("q", "")
    hits = [{"id": i, "title": f"{term} result {i}", "score": i / 7} for i in range(60)]
    return JSONResponse({"q": term, "hits": len(json.dumps(hits))})


async def health(request: Request) -> JSONResponse:
    return JSONResponse({"ok": True, "cached_pages": len(RENDERED)})


app = Starlette(
    routes=[
        Route("/profile/{user}", profile),
        Route("/search", search),
        Route("/health", health),
    ]
)
