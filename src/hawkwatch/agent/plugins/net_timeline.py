"""One request's timeline while it is in flight, and what the record says of it.

The instrumentation of each client family only stamps moments (``time.perf_counter_ns``) on a
``Timeline``; phases, the failed phase and the record are computed once, when the request ends
(``detectors.md`` §6.4: TLS is its own phase, after TCP; a phase that did not happen is null).
"""

from __future__ import annotations

import functools
import itertools
import sys
import threading
import time
from collections.abc import Callable
from types import CodeType, FrameType, ModuleType

from hawkwatch.model.urls import host_of, redact_url

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, ClassVar, Final

    from hawkwatch.model.records import CallSite, NetworkTransaction, Phases

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
_clock = time.perf_counter_ns
_model: ModuleType | None = None
"""``hawkwatch.model.records`` once the first record was made (``records_model``)."""


def records_model() -> ModuleType:
    """``hawkwatch.model.records``: imported at the first record, not at the agent's start, and
    kept here: an import statement in a function goes through the import machinery's checks at
    every call (~4,000 instructions under callgrind, three times per record). Hot callers read
    ``_model or records_model()``."""
    global _model
    if _model is None:
        from hawkwatch.model import records

        _model = records
    return _model
current_thread = threading.current_thread


class Timeline:
    """Moments of one request (ns, ``perf_counter_ns``); None until they happen.

    The request path only stamps and keeps references: what needs parsing or formatting (the
    URL, response headers, call sites, the thread's name, the wall-clock start) is worked out
    in ``to_record``, on the scheduler thread, from the objects the client families keep here
    (``response``, ``request``…; their ``complete`` reads them). Slots, every one set here:
    a slot store costs a fraction of a dictionary insert.
    """

    __slots__ = (
        "client", "connect_end", "connect_start", "dns_end", "dns_start", "error",
        "failed_phase", "fetch_start", "finished", "frames", "head", "http_version", "library",
        "method", "on_loop_thread", "origin", "redirect_to", "request", "request_bytes",
        "request_end", "request_headers", "request_start", "response", "response_bytes",
        "response_end", "response_header_bytes", "response_start", "reused", "status", "task",
        "thread", "tls_end", "tls_start", "url", "url_object",
    )  # fmt: skip

    traced: ClassVar[bool] = True
    """A class attribute: False on ``Untraced``, what the monitor tells them apart by."""

    def __init__(self, library: str, method: str, url: str, fetch_start: int | None = None):
        self.library = library
        self.method = method
        self.url = url
        self.fetch_start: int = _clock() if fetch_start is None else fetch_start
        self.origin = ""
        """``scheme://host:port`` when ``url`` is a path (http.client's ``putrequest``)."""
        self.client = 0
        """Rank of the outermost stdlib-family client seen above the hook (``_CLIENTS``)."""
        self.frames: tuple[tuple[CodeType, int], ...] = ()
        """The app's call sites as (code, ``f_lasti``): named in ``to_record``."""
        self.thread: threading.Thread | None = None
        self.task: str | None = None
        self.on_loop_thread = False
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
        # what a client family keeps to describe later (``complete``)
        self.response: Any = None
        self.request: Any = None
        self.head: Any = None
        self.request_headers: Any = None
        self.url_object: Any = None

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

    def complete(self) -> None:
        """Work out what the request path only kept a reference to (client families' own)."""

    def to_record(self, keep_params: frozenset[str], wall_offset: float) -> NetworkTransaction:
        """The record (``wall_offset``: ``time.time()`` minus ``perf_counter_ns()`` in s)."""
        self.complete()
        facts = url_facts(self.url, self.origin, keep_params)
        thread = self.thread
        model = _model or records_model()
        record: NetworkTransaction = model.NetworkTransaction(  # positional, in field order:
            # a tenth of keywords' cost
            wall_offset + self.fetch_start / 1e9,  # start
            self.method,
            facts[0],  # url
            facts[1],  # host
            self.library or _CLIENTS[self.client],
            next(_index),
            self.status,
            self.http_version,
            self.reused,
            self.phases(),
            self.request_bytes or None,
            self.response_bytes,
            self.response_header_bytes,
            self.error,
            self.failed_phase,
            None if thread is None else thread.name,
            self.task,
            self.on_loop_thread,
            _call_sites_named(self.frames),
            None if self.redirect_to is None else redact_url(self.redirect_to),
            facts[2],  # query_digest
        )
        return record

    def phases(self) -> Phases:
        make = (_model or records_model()).Phases
        fetch_start, dns_start, dns_end = self.fetch_start, self.dns_start, self.dns_end
        connect_start, connect_end = self.connect_start, self.connect_end
        tls_start, tls_end = self.tls_start, self.tls_end
        request_start, request_end = self.request_start, self.request_end
        response_start, response_end = self.response_start, self.response_end
        if (
            dns_start is None and connect_start is None and tls_start is None
            and request_start is not None and request_end is not None
            and response_start is not None and response_end is not None
            and fetch_start <= request_start <= request_end <= response_start <= response_end
        ):  # a request on a reused connection that ended well: most of them
            reused: Phases = make(  # positional: queue, dns, tcp, tls, send, ttfb, receive, total
                (request_start - fetch_start + 500) // 1000 / 1000,
                None,
                None,
                None,
                (request_end - request_start + 500) // 1000 / 1000,
                (response_start - request_end + 500) // 1000 / 1000,
                (response_end - response_start + 500) // 1000 / 1000,
                (response_end - fetch_start + 500) // 1000 / 1000,
            )
            return reused
        connected = tls_end or connect_end
        if request_start is not None and connected is not None and connected > request_start:
            request_start = connected  # http.client connects inside send
        spans = (
            (fetch_start, dns_start or connect_start or request_start),  # queue
            (dns_start, dns_end),
            (connect_start, tls_start or connect_end),  # tcp
            (tls_start, tls_end),
            (request_start, request_end),  # send
            (request_end, response_start),  # ttfb
            (response_start, response_end),  # receive
            (fetch_start, response_end or _end_of_failure(self)),  # total
        )
        queue, dns, tcp, tls, send, ttfb, receive, total = [
            None if begin is None or end is None  # ns to ms, to the µs, with no call per phase
            else (end - begin + 500) // 1000 / 1000 if end > begin else 0.0
            for begin, end in spans
        ]
        phases: Phases = make(queue, dns, tcp, tls, send, ttfb, receive, total)
        return phases


def _call_sites_named(frames: tuple[tuple[CodeType, int], ...]) -> tuple[CallSite, ...]:
    """``CallSite``s of (code, ``f_lasti``) pairs, each named once (no call per frame)."""
    make_site = (_model or records_model()).CallSite

    named: list[CallSite] = []
    for code, lasti in frames:
        known = _sites.get((id(code), lasti))  # not the code itself: its hash covers constants
        if known is None or known[0] is not code:
            known = (code, make_site(code.co_qualname, code.co_filename, _line_of(code, lasti)))
            if len(_sites) >= _MAX_KINDS:
                _sites.clear()
            _sites[id(code), lasti] = known
        named.append(known[1])
    return tuple(named)


def _line_of(code: CodeType, lasti: int) -> int:
    """The line of the instruction at byte offset ``lasti`` (what ``frame.f_lineno`` says)."""
    for start, end, line in code.co_lines():
        if start <= lasti < end:
            return line or 0
    return code.co_firstlineno


@functools.lru_cache(maxsize=1024)
def url_facts(url: str, origin: str, keep_params: frozenset[str]) -> tuple[str, str, str | None]:
    """Redacted URL, ``host:port`` and query digest of ``url`` (a path when ``origin`` is
    given: http.client's): the same URLs come again and again."""
    if origin and "://" not in url:
        url = origin + (url if url.startswith("/") else "/" + url)
    return redact_url(url, keep_params), host_of(url), _query_digest(url)


def _query_digest(url: str) -> str | None:
    """8 bytes of BLAKE2b over the URL's query (hashed on the scheduler thread, not per request)."""
    query = url.partition("?")[2].partition("#")[0]
    if not query:
        return None
    import hashlib

    return hashlib.blake2b(query.encode(errors="replace"), digest_size=8).hexdigest()


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
    socket = sys.modules.get("socket")  # imported by whoever made the request
    if socket is not None and isinstance(cause, socket.gaierror):
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


#: The HTTP libraries a stdlib request may come through, by how far from the socket they sit
#: (index: ``Timeline.client``; 0: none seen, the request was made with http.client itself).
_CLIENTS: Final = ("http.client", "http.client", "urllib.request", "urllib3", "requests")
_CLIENT_RANK: Final = {name: rank for rank, name in enumerate(_CLIENTS) if rank}
CLIENTS: Final = _CLIENTS
_APP: Final = -1
_EVENTS: Final = -2
"""``asyncio/events.py``: a library, but its ``Handle._run`` (a loop running a callback) ends
the walk: beyond it is the loop's machinery and whoever started the loop, not the request's path."""
MAX_DEPTH: Final = 64
"""Frames looked at above the hook: app frames beyond it are not named."""
_MAX_KINDS: Final = 4096
_kinds: dict[str, int] = {}
"""Per code file name: ``_APP``, ``_EVENTS`` or a library's client rank (0: a library, no
client). By file name: a string's hash is kept, a code object's covers its constants (a module's:
its functions' too). Names like ``<string>`` (code compiled at run time) are never kept."""
_sites: dict[tuple[int, int], tuple[CodeType, CallSite]] = {}
"""Named call sites by (code id, ``f_lasti``), with their code (an id can be reused)."""


def _learn(frame: FrameType) -> int:
    """Whether ``frame``'s code is the app's or a library's (which client): once per file."""
    module = frame.f_globals.get("__name__", "")
    top = module.partition(".")[0] if isinstance(module, str) else ""
    if module == "asyncio.events":
        kind = _EVENTS
    elif top in _LIBRARY_PACKAGES:
        kind = _CLIENT_RANK.get(module if module in {"urllib.request", "http.client"} else top, 0)
    else:
        kind = _APP
    filename = frame.f_code.co_filename
    if not filename.startswith("<") or filename.startswith("<frozen "):
        if len(_kinds) >= _MAX_KINDS:
            _kinds.clear()
        _kinds[filename] = kind
    return kind


_routes: dict[tuple[int, int], tuple[CodeType, int, CodeType, int]] = {}
"""Learned walks through the HTTP stack, by the hook's caller (code id, ``f_lasti``): (its code,
how many library frames lie below the first app frame, the last of them's code, the client)."""
_getframe = sys._getframe
_ROUTE_MIN: Final = 3
"""Library frames a walk must cross to be learned: a shorter one costs less than the jump."""


def call_sites(
    frame: FrameType | None, depth: int = -1
) -> tuple[int, tuple[tuple[CodeType, int], ...]]:
    """The outermost HTTP client above ``frame`` and the innermost app frames (at most five).

    One walk outwards (``_walk``), one dictionary look-up per frame and no call per frame:
    library frames (HTTP stack, hawkwatch) are skipped; the client is the one of ``_CLIENTS``
    farthest from the socket seen before the first app frame. App frames are kept as (code,
    ``f_lasti``): named in ``to_record``. With ``depth`` (``sys._getframe(depth)`` here is
    ``frame``), a walk through the library frames learned from the same caller line is jumped
    over in C (``sys._getframe`` makes no frame object on the way, ``f_back`` makes one per
    frame), when the frame it ended at is again the last library frame and an app frame calls
    it.
    """
    client, app = _walk(frame, depth + 1 if depth >= 0 else -1)
    return client, _app_frames(app, _kinds)


def _walk(frame: FrameType | None, depth: int) -> tuple[int, FrameType | None]:
    """``call_sites``' walk: the client and the first app frame (``depth`` as there, counted
    from this function's frame)."""
    kinds = _kinds
    client = 0
    if depth >= 0 and frame is not None:
        code = frame.f_code
        route = _routes.get((id(code), frame.f_lasti))
        if route is not None and route[0] is code:
            try:
                last = _getframe(depth + route[1] - 1)
            except ValueError:
                last = None
            app = None if last is None or last.f_code is not route[2] else last.f_back
            if app is not None and (kinds.get(app.f_code.co_filename) or _learn(app)) == _APP:
                return route[3], app
    start, walked, last_code = frame, 0, None
    while frame is not None:
        try:
            kind = kinds[frame.f_code.co_filename]
        except KeyError:
            kind = _learn(frame)
        if kind < 0:
            if kind == _APP and walked >= _ROUTE_MIN and depth >= 0 and start is not None:
                _learn_route(start, walked, last_code, client)  # the next one jumps
            break
        if kind > client:  # noqa: PLR1730 - max() is a call per frame
            client = kind
        last_code = frame.f_code
        walked += 1
        frame = frame.f_back
    return client, frame


def _learn_route(
    start: FrameType, walked: int, last_code: CodeType | None, client: int
) -> None:
    if len(_routes) >= _MAX_KINDS:
        _routes.clear()
    code = start.f_code
    if last_code is not None:
        _routes[id(code), start.f_lasti] = (code, walked, last_code, client)


def _app_frames(frame: FrameType | None, kinds: dict[str, int]) -> tuple[tuple[CodeType, int], ...]:
    """The app frames from ``frame`` outwards (at most five, within ``MAX_DEPTH`` frames)."""
    found: list[tuple[CodeType, int]] = []
    budget = MAX_DEPTH
    while frame is not None and budget:
        code = frame.f_code
        try:
            kind = kinds[code.co_filename]
        except KeyError:
            kind = _learn(frame)
        if kind == _APP:
            found.append((code, frame.f_lasti))
            if len(found) == MAX_CALL_SITES:
                break
        elif kind == _EVENTS and code.co_name == "_run":
            break
        frame = frame.f_back
        budget -= 1
    return tuple(found)


def describe_context(
    timeline: Timeline, get_loop: Callable[[], object | None], depth: int
) -> None:
    """Note where the request was made (``sys._getframe(depth)`` in the caller: the hook's
    caller): call sites, thread, asyncio task, whether a loop runs here; for the stdlib family
    also which client made it (``requests`` over ``urllib3``…)."""
    timeline.client, timeline.frames = call_sites(_getframe(depth + 1), depth + 2)
    timeline.thread = current_thread()
    loop = get_loop()
    if loop is not None:  # so asyncio is imported
        timeline.on_loop_thread = True
        task = sys.modules["asyncio"].current_task(loop)
        if task is not None:
            timeline.task = task.get_name()


def client_of(depth: int) -> int:
    """Which client of ``_CLIENTS`` made the request (``sys._getframe(depth)`` in the caller:
    the hook's caller), for an untraced request: ``call_sites``' walk, naming no frame."""
    return _walk(_getframe(depth + 1), depth + 2)[0]
