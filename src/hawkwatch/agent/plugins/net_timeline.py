"""One request's timeline while it is in flight, and what the record says of it.

The instrumentation of each client family only stamps moments (``time.perf_counter_ns``) on a
``Timeline``; phases, the failed phase and the record are computed once, when the request ends
(``detectors.md`` §6.4: TLS is its own phase, after TCP; a phase that did not happen is null).
"""

from __future__ import annotations

import functools
import itertools
import socket
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Final

from hawkwatch.model.records import CallSite, NetworkTransaction, Phases
from hawkwatch.model.urls import host_of, redact_url

#: Frames of these packages are the client's, not the app's call site.
_LIBRARY_PREFIXES: Final = (
    "hawkwatch", "http", "urllib", "urllib3", "requests", "httpx", "httpcore", "h11", "h2",
    "aiohttp", "asyncio", "anyio", "socket", "ssl", "concurrent", "threading", "contextlib",
    "selectors", "trio", "sniffio", "functools", "aiosignal", "aiohappyeyeballs", "multidict",
    "yarl", "frozenlist", "propcache", "certifi", "charset_normalizer", "idna", "hpack",
)  # fmt: skip
_LIBRARY_PACKAGES: Final = frozenset(_LIBRARY_PREFIXES)
MAX_CALL_SITES: Final = 5
_index = itertools.count(1)


class Timeline:
    """Moments of one request (ns, ``perf_counter_ns``); None until they happen."""

    __slots__ = (
        "connect_end", "connect_start", "dns_end", "dns_start", "error", "failed_phase",
        "fetch_start", "finished", "frames", "http_version", "library", "method", "on_loop_thread",
        "redirect_to", "request_bytes", "request_end", "request_start", "response_bytes",
        "response_end", "response_header_bytes", "response_start", "reused", "start_wall",
        "status", "task", "thread", "tls_end", "tls_start", "url",
    )  # fmt: skip

    def __init__(self, library: str, method: str, url: str, *, fetch_start: int | None = None):
        self.library = library
        self.method = method
        self.url = url
        self.fetch_start = time.perf_counter_ns() if fetch_start is None else fetch_start
        self.start_wall = time.time() - (time.perf_counter_ns() - self.fetch_start) / 1e9
        self.dns_start: int | None = None
        self.dns_end: int | None = None
        self.connect_start: int | None = None
        self.connect_end: int | None = None
        self.tls_start: int | None = None
        self.tls_end: int | None = None
        self.request_start: int | None = None
        self.request_end: int | None = None
        self.response_start: int | None = None
        self.response_end: int | None = None
        self.status: int | None = None
        self.http_version: str | None = None
        self.reused: bool | None = None
        self.request_bytes = 0
        self.response_bytes: int | None = None
        self.response_header_bytes: int | None = None
        self.error: str | None = None
        self.failed_phase: str | None = None
        self.redirect_to: str | None = None
        self.finished = False
        self.thread = threading.current_thread().name
        self.task: str | None = None
        self.on_loop_thread = False
        self.frames: tuple[CallSite, ...] = ()

    def fail(self, exc: BaseException) -> None:
        """Note the error (its root cause: ``ConnectionRefusedError`` rather than requests'
        ``ConnectionError``) and the phase it ended: named by the cause where it says (DNS,
        refused, TLS), else the first phase started and not finished."""
        cause = root_cause(exc)
        self.error = type(cause).__name__
        self.failed_phase = _phase_of(cause) or self.current_phase()

    def current_phase(self) -> str:
        """The phase in progress: the first started and unfinished, else the one after the last."""
        for phase, begun, ended in (
            ("dns", self.dns_start, self.dns_end),
            ("tcp", self.connect_start, self.connect_end),
            ("tls", self.tls_start, self.tls_end),
        ):
            if begun is not None and ended is None:
                return phase
        if self.response_start is not None:
            return "receive"
        if self.request_end is not None:
            return "ttfb"
        if self.request_start is not None:
            return "send"
        if self.tls_end is not None or self.connect_end is not None:
            return "send"
        return "queue"

    def to_record(self, keep_params: frozenset[str]) -> NetworkTransaction:
        return NetworkTransaction(
            start=self.start_wall,
            index=next(_index),
            method=self.method,
            url=_redacted(self.url, keep_params),
            host=_host(self.url),
            library=self.library,
            status=self.status,
            http_version=self.http_version,
            reused=self.reused,
            phases_ms=self.phases(),
            request_bytes=self.request_bytes or None,
            response_bytes=self.response_bytes,
            response_header_bytes=self.response_header_bytes,
            error=self.error,
            failed_phase=self.failed_phase,
            thread=self.thread,
            task=self.task,
            on_loop_thread=self.on_loop_thread,
            frames=self.frames,
            redirect_to=None if self.redirect_to is None else redact_url(self.redirect_to),
            query_digest=_query_digest(self.url),
        )

    def phases(self) -> Phases:
        connected = self.tls_end or self.connect_end
        request_start = self.request_start
        if request_start is not None and connected is not None:
            request_start = max(request_start, connected)  # http.client connects inside send
        first = self.dns_start or self.connect_start or request_start
        return Phases(
            queue=_ms(self.fetch_start, first),
            dns=_ms(self.dns_start, self.dns_end),
            tcp=_ms(self.connect_start, self.tls_start or self.connect_end),
            tls=_ms(self.tls_start, self.tls_end),
            send=_ms(request_start, self.request_end),
            ttfb=_ms(self.request_end, self.response_start),
            receive=_ms(self.response_start, self.response_end),
            total=_ms(self.fetch_start, self.response_end or _end_of_failure(self)),
        )


@functools.lru_cache(maxsize=1024)
def _redacted(url: str, keep_params: frozenset[str]) -> str:
    return redact_url(url, keep_params)  # the same URLs come again and again: parse them once


@functools.lru_cache(maxsize=1024)
def _query_digest(url: str) -> str | None:
    """8 bytes of BLAKE2b over the URL's query (hashed on the scheduler thread, not per request)."""
    query = url.partition("?")[2].partition("#")[0]
    if not query:
        return None
    import hashlib

    return hashlib.blake2b(query.encode(errors="replace"), digest_size=8).hexdigest()


@functools.lru_cache(maxsize=1024)
def _host(url: str) -> str:
    return host_of(url)


def root_cause(exc: BaseException) -> BaseException:
    """The innermost OS-level error behind ``exc`` (libraries wrap them), else ``exc``."""
    seen: set[int] = set()
    found = exc
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 16:
        seen.add(id(current))
        if isinstance(current, OSError):
            found = current
        nested = getattr(current, "certificate_error", None) or getattr(current, "os_error", None)
        if isinstance(nested, BaseException) and id(nested) not in seen:
            current = nested
            continue
        current = current.__cause__ or current.__context__
    return found


def _phase_of(cause: BaseException) -> str | None:
    if isinstance(cause, socket.gaierror):
        return "dns"
    ssl = sys.modules.get("ssl")  # imported by whoever made a TLS connection
    if ssl is not None and isinstance(cause, ssl.SSLError | ssl.CertificateError):
        return "tls"
    if isinstance(cause, ConnectionRefusedError):
        return "tcp"
    return None


def _end_of_failure(timeline: Timeline) -> int | None:
    if timeline.error is None:
        return None
    moments = (
        timeline.response_start, timeline.request_end, timeline.request_start, timeline.tls_start,
        timeline.connect_start, timeline.dns_end, timeline.dns_start,
    )  # fmt: skip
    return max((m for m in moments if m is not None), default=None)


def _ms(begin: int | None, end: int | None) -> float | None:
    if begin is None or end is None:
        return None
    return round(max(end - begin, 0) / 1e6, 3)


#: The HTTP libraries a stdlib request may come through, by how far from the socket they sit.
_CLIENT_RANK: Final = {"http.client": 0, "urllib.request": 1, "urllib3": 2, "requests": 3}


def call_sites(frame: FrameType | None) -> tuple[str, tuple[CallSite, ...]]:
    """The outermost HTTP client above ``frame`` and the innermost app frames (at most five).

    One walk outwards: library frames (HTTP stack, hawkwatch) are skipped; the client is the
    one of ``_CLIENT_RANK`` farthest from the socket seen before the first app frame.
    """
    found: list[CallSite] = []
    client = "http.client"
    packages, ranks = _LIBRARY_PACKAGES, _CLIENT_RANK
    while frame is not None and len(found) < MAX_CALL_SITES:
        module = frame.f_globals.get("__name__", "")
        top = module.partition(".")[0] if isinstance(module, str) else ""
        if top in packages:
            if not found:
                name = module if module in {"urllib.request", "http.client"} else top
                if ranks.get(name, -1) > ranks[client]:
                    client = name
        else:
            code = frame.f_code
            found.append(CallSite(code.co_qualname, code.co_filename, frame.f_lineno or 0))
        frame = frame.f_back
    return client, tuple(found)


def describe_context(
    timeline: Timeline, get_loop: Callable[[], object | None], frame: FrameType | None
) -> None:
    """Fill where the request was made: call sites, asyncio task, whether a loop runs here;
    for the stdlib family also which client made it (``requests`` over ``urllib3``…)."""
    client, timeline.frames = call_sites(frame)
    if timeline.library == "":
        timeline.library = client
    if get_loop() is not None:
        timeline.on_loop_thread = True
        try:
            import asyncio

            task = asyncio.current_task()
        except RuntimeError:
            task = None
        if task is not None:
            timeline.task = task.get_name()
