"""A request the head sampling left untraced (``net_sampling``): what its family's outer hook
knows of it, and the record it gets when it failed, was slow or blocked a loop's thread."""

from __future__ import annotations

from hawkwatch.agent.plugins.net_timeline import (
    _CLIENTS,
    _clock,
    _index,
    _phase_of,
    records_model,
    root_cause,
    url_facts,
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
        """Redacted URL, ``host:port`` and query digest (``url_facts``)."""
        url = self.url_object
        if url is not None:
            self.url, self.url_object = str(url), None
        return url_facts(self.url, self.origin, keep_params)

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


Key: TypeAlias = "tuple[object, str, int | None, str, int]"
"""An untraced request's aggregate: origin (the sampler's key: text, or httpx's parts), method
as the app gave it (made upper case where it is written), status, library, client rank
(``Aggregates.fold``'s key)."""
MAX_KEYS: Final = 4096
"""Aggregates a ``Tally`` holds at once; beyond, it starts again (a few counts lost)."""


class Tally:
    """Untraced requests that ended well, counted where they end (a family's hooks, where it is
    cheaper than an ``Untraced``: aiohttp's and httpx's): per aggregate key, their totals (ns)
    and bytes received, alternately, in one list each hook appends to (two appends, in C, and
    no object of ours per request); the first URL of each key, for its host. The monitor takes
    what was appended (``take``) and folds each key's at once (``Aggregates.fold_tally``). Never a
    request that failed, was slow or blocked a loop's thread: those get an ``Untraced``, and a
    record.

    Thread-safe without a lock: a hook appends the total, then the bytes; ``take`` takes an
    even number of items from the front of each list (``del`` in C), so a pair a hook is in
    the middle of appending stays for the next ``take``; a key's list is not replaced while a
    hook may hold it (``new_key`` uses ``setdefault``), nor ``lists`` (cleared in place)."""

    __slots__ = ("closed", "lists", "urls")

    def __init__(self) -> None:
        self.lists: dict[Key, list[int | None]] = {}
        self.urls: dict[Key, Any] = {}
        self.closed = False
        """Taken no more (the monitor stopped): a hook left in another tool's chain of wrappers
        appends to a list nobody keeps."""

    def count(self, key: Key, url: Any, total_ns: int, size: int | None) -> None:
        """One request under ``key`` (``url``: its first, for the host). aiohttp's hook inlines
        this (a call is a share of its budget worth keeping)."""
        items = self.lists.get(key) or self.new_key(key, url)
        items.append(total_ns)
        items.append(size)

    def new_key(self, key: Key, url: Any) -> list[int | None]:
        """The list of ``key``, made at its first request (``url``: its host, once)."""
        if self.closed:
            return []
        if len(self.lists) >= MAX_KEYS:
            self.clear()
        self.urls.setdefault(key, url)
        return self.lists.setdefault(key, [])

    def take(self) -> list[tuple[Key, list[int], list[int | None], Any]]:
        """(key, totals, bytes received, first URL) of what was appended since the last call."""
        taken = []
        for key, items in list(self.lists.items()):
            count = len(items) & ~1
            if count:
                pairs = items[:count]
                del items[:count]
                taken.append((key, pairs[0::2], pairs[1::2], self.urls.get(key)))
        return taken  # type: ignore[return-value]  # totals are never None

    def clear(self) -> None:
        """Forget every key; in place: the hooks hold ``lists`` (one a hook holds now is lost)."""
        self.lists.clear()
        self.urls.clear()

    def close(self) -> None:
        """Keep nothing from now on (``closed``)."""
        self.closed = True
        self.clear()


_CLIENT_ERROR_PHASES: Final = {
    "PoolTimeout": "queue", "ConnectTimeout": "tcp", "ConnectError": "tcp",
    "ConnectionTimeoutError": "tcp", "ClientConnectorError": "tcp", "WriteTimeout": "send",
    "WriteError": "send", "ReadTimeout": "ttfb", "SocketTimeoutError": "ttfb",
    "ServerTimeoutError": "ttfb", "ServerDisconnectedError": "ttfb",
    "ClientPayloadError": "receive",
}  # fmt: skip
"""The phase httpx's and aiohttp's own exceptions name (an untraced request's only clue)."""
