"""A request the head sampling left untraced (``net_sampling``): what its family's outer hook
knows of it, and the record it gets when it failed, was slow or blocked a loop's thread."""

from __future__ import annotations

from hawkwatch.agent.plugins.net_timeline import (
    _CLIENTS,
    _clock,
    _index,
    _phase_of,
    _url_facts,
    records_model,
    root_cause,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, ClassVar, Final, TypeAlias

    from hawkwatch.model.records import NetworkTransaction


class Untraced:
    """A request the sampler left untraced (``net_sampling``): its start and end, status, bytes
    received, error, whether a loop runs in its thread and which client made it; no phases, no
    call sites. The inner hooks see no timeline for it and return at once; what the outer ones
    set here (the attributes ``Timeline`` shares) costs a slot store each."""

    __slots__ = (
        "client", "error", "failed_phase", "fetch_start", "finished", "key", "library", "method",
        "on_loop_thread", "origin", "request_bytes", "response_bytes", "response_end", "stage",
        "status", "url", "url_object",
    )  # fmt: skip
    traced: ClassVar[bool] = False

    def __init__(self, library: str, method: str, url: str, fetch_start: int) -> None:
        self.library = library
        self.method = method
        self.url = url
        self.fetch_start = fetch_start
        self.origin = ""
        self.key: object = None
        """The sampler's key of its origin (what the aggregates fold it by)."""
        self.client = 0
        self.on_loop_thread = False
        self.status: int | None = None
        self.request_bytes = 0
        self.response_bytes: int | None = None
        self.response_end: int | None = None
        self.error: str | None = None
        self.failed_phase: str | None = None
        self.finished = False
        self.url_object: Any = None
        self.stage: str | None = None
        """The phase it is in, where the outer hooks know it cheaply (http.client's)."""

    def fail(self, exc: BaseException) -> None:
        """The error's root cause; the phase where the cause names it (DNS, refused, TLS) or
        the client's exception does (httpx's ``ConnectTimeout``…), else the stage the outer
        hooks saw, else ``receive`` once the response's head came, else unknown (null)."""
        cause = root_cause(exc)
        self.error = type(cause).__name__
        self.failed_phase = (
            _phase_of(cause)
            or _CLIENT_ERROR_PHASES.get(type(exc).__name__)
            or ("receive" if self.status is not None else self.stage)
        )
        if self.response_end is None:
            self.response_end = _clock()

    def library_name(self) -> str:
        return self.library or _CLIENTS[self.client]

    def total_ns(self) -> int:
        end = self.response_end
        return 0 if end is None or end < self.fetch_start else end - self.fetch_start

    def facts(self, keep_params: frozenset[str]) -> tuple[str, str, str | None]:
        """Redacted URL, ``host:port`` and query digest (``_url_facts``)."""
        url = self.url_object
        if url is not None:
            self.url, self.url_object = str(url), None
        return _url_facts(self.url, self.origin, keep_params)

    def to_record(self, keep_params: frozenset[str], wall_offset: float) -> NetworkTransaction:
        """What is known of it, ``traced`` false."""
        model = records_model()  # loaded by the first record, kept
        facts = self.facts(keep_params)
        total = (self.total_ns() + 500) // 1000 / 1000
        record: NetworkTransaction = model.NetworkTransaction(
            wall_offset + self.fetch_start / 1e9, self.method, facts[0], facts[1],
            self.library_name(), next(_index), self.status, None, None,
            model.Phases(total=total), self.request_bytes or None, self.response_bytes, None,
            self.error, self.failed_phase, None, None, self.on_loop_thread, (), None, facts[2],
            False,
        )  # fmt: skip
        return record


Ended: TypeAlias = "tuple[tuple[str, str, int | None, str, int], int, int | None, Any, int, bool]"
"""An untraced request that ended without an error, as a family's hooks queue it when that is
cheaper than an ``Untraced`` (a tuple is built in C; aiohttp's): its aggregate's key (origin,
method as the app gave it (made upper case where it is written), status, library, client rank:
the key ``Aggregates`` folds it under, built where the request ends, where a tuple costs
least), total (ns), bytes received, URL (text or the client's
URL object), fetch start (ns, ``perf_counter_ns``), on a loop's thread. Never one that blocked a
loop's thread (a blocking client on a loop's thread queues an ``Untraced``: it gets a record).
The monitor folds it as it is, and makes it an ``Untraced`` (``untraced_of``) only for a record
(a slow request) or its aggregate's first fold."""


def untraced_of(ended: Ended) -> Untraced:
    """The ``Untraced`` an ``Ended`` tuple stands for."""
    (origin, method, status, library, client), total, size, url, start, on_loop = ended
    untraced = Untraced(library, method.upper(), "", start)
    untraced.url_object, untraced.origin, untraced.key = url, origin, origin
    untraced.client, untraced.on_loop_thread, untraced.status = client, on_loop, status
    untraced.response_end, untraced.response_bytes = start + total, size
    untraced.finished = True
    return untraced


_CLIENT_ERROR_PHASES: Final = {
    "PoolTimeout": "queue", "ConnectTimeout": "tcp", "ConnectError": "tcp",
    "ConnectionTimeoutError": "tcp", "ClientConnectorError": "tcp", "WriteTimeout": "send",
    "WriteError": "send", "ReadTimeout": "ttfb", "SocketTimeoutError": "ttfb",
    "ServerTimeoutError": "ttfb", "ServerDisconnectedError": "ttfb",
    "ClientPayloadError": "receive",
}  # fmt: skip
"""The phase httpx's and aiohttp's own exceptions name (an untraced request's only clue)."""
