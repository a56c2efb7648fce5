"""URL redaction applied before a request is recorded or shown: nothing secret is kept.

URLs keep scheme, host, port and path; userinfo and fragments are dropped, and every query value
is replaced by ``[redacted]`` (the parameter names stay: they say what kind of request it was).
Bodies are never stored; header values are never stored either, only their byte counts.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final

REDACTED: Final = "[redacted]"


def redact_url(url: str, keep_params: frozenset[str] = frozenset()) -> str:
    """``url`` without userinfo, fragment or query values (names in ``keep_params`` keep theirs)."""
    # Not at the agent's start (~10 M instructions on 3.13, where pathlib no longer brings it);
    # by a request's end its HTTP library (http.client, httpx, aiohttp) has imported it.
    from urllib.parse import SplitResult, urlsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return REDACTED
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None else f"{host}:{port}"
    query = "&".join(_redact_pair(pair, keep_params) for pair in parts.query.split("&") if pair)
    return SplitResult(parts.scheme, netloc, parts.path, query, "").geturl()


def _redact_pair(pair: str, keep: frozenset[str]) -> str:
    name, equals, _value = pair.partition("=")
    if not equals:
        return name
    return pair if name in keep else f"{name}={REDACTED}"


def host_of(url: str) -> str:
    """``host:port`` of a URL, with the scheme's default port filled in."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or {"https": 443, "http": 80}.get(parts.scheme)
    except ValueError:
        return "?"
    if ":" in host:
        host = f"[{host}]"
    return host if port is None else f"{host}:{port}"
