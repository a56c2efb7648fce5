"""Requests made through aiohttp's client, timed by wrapping the coroutines every request awaits.

Why not aiohttp's own extension point (``TraceConfig``, kept as the fallback in
``net_aiohttp_signals``): a session with any trace config makes aiohttp build a ``Trace`` and a
parameters object per signal, a copy of the URL with its query merged, and two more callbacks on
its stream writer, for every request, whatever the callbacks do. Measured on a loopback
benchmark (``benchmarks/network_instructions.py``, ``hooks`` column) that alone is about 20 % of
aiohttp's own cost per request, seven times the 3 % budget. Wrapping four coroutines that every
request already awaits costs a stamp and a frame each.

Wrapped (aiohttp 3.9 to 3.x; another version, or one whose functions changed shape, gets the
``TraceConfig`` instrumentation instead):

- ``ClientSession._request``: the request begins (fetch start, call site, task); its hop is
  in a context variable for the coroutines below (the same task, or tasks it starts); an
  exception it raises ends the hop in the phase it was in.
- ``TCPConnector._resolve_host`` (DNS; none for an IP address) and ``_create_connection``
  (TCP and TLS in one call, so for ``https`` the ``tcp`` phase includes the handshake and
  ``tls`` is null); a request that opens no connection reused one.
- ``ClientRequest.send``: the head is written (send); each ``send`` after a response began a new
  hop (a redirect), or retries the send (a dropped keep-alive connection).
- ``ClientResponse.start``: the head was read (first byte).

The body ends where aiohttp gives its connection back (``Connection.add_callback``, called at
the body's end of file, or when the response is released or closed unread), with the bytes as
aiohttp's stream counted them; when the body came with the head (a small answer: the usual),
it ended in ``start``. Nothing of aiohttp's that every response calls (``read``,
``release``…) is wrapped for it: a callback is added only to a response still streaming.

Untraced requests (``net_sampling``) go through ``_request``'s wrapper alone, the hooks between
returning at once: no object of ours; where the body ends, its total and bytes are appended to
the monitor's ``Tally`` under its aggregate's key (a request that failed or was slow gets an
``Untraced``, for its record).
"""

from __future__ import annotations

import contextvars
import inspect
import time
from collections.abc import Callable
from functools import partial
from itertools import chain
from typing import Any, Final

from hawkwatch.agent.plugins.net_patch import Finish, Instrumentation, OnError, Sampled
from hawkwatch.agent.plugins.net_timeline import Timeline, describe_context
from hawkwatch.agent.plugins.net_untraced import Tally, Untraced
from hawkwatch.model.network_rules import SLOW_REQUEST_MS

_clock = time.perf_counter_ns
_SLOW_NS: Final = int(SLOW_REQUEST_MS * 1e6)
"""An untraced request this long gets a record (the monitor's slow-request threshold)."""
_current: contextvars.ContextVar[_Hop | None] = contextvars.ContextVar(
    "hawkwatch_aiohttp_hop", default=None
)
_tracing: set[_Hop] = set()
"""The first hop of each traced request in flight: while there is none, the hooks below
``_request`` return at once, without reading ``_current`` (a method call)."""
#: The shapes the direct instrumentation relies on: (owner, function, its parameters).
_SHAPES: Final = (
    ("ClientSession", "_request", ("self", "method", "str_or_url")),
    ("TCPConnector", "_resolve_host", ("self", "host", "port")),
    ("TCPConnector", "_create_connection", ("self", "req")),
    ("ClientRequest", "send", ("self", "conn")),
    ("ClientResponse", "start", ("self", "connection")),
)


class _Hop(Timeline):
    """One request of aiohttp's; what aiohttp gives is kept as it is (the URL object, the
    request headers as sent, the response's raw headers and version) and described in
    ``to_record``."""

    __slots__ = ()

    def complete(self) -> None:
        url = self.url_object
        if url is not None:
            self.url, self.url_object = str(url), None
        if self.request_headers is not None:
            headers, self.request_headers = self.request_headers, None
            # name: value\r\n per header, summed in C (no Python step per header)
            items = headers.items()
            self.request_bytes += sum(map(len, chain.from_iterable(items))) + 4 * len(items)
        if self.response is not None:  # the raw headers, and the version in ``head``
            raw, self.response = self.response, None
            version = self.head
            if version is not None:
                self.http_version = _VERSIONS.get(version) or _version_text(version)
            self.response_header_bytes = sum(map(len, chain.from_iterable(raw))) + 4 * len(raw)
            if self.redirect_to is None and 300 <= (self.status or 0) < 400 and url is not None:
                self.redirect_to = _location(url, raw)


_VERSIONS: dict[Any, str] = {}
"""``"1.1"`` by aiohttp's ``HttpVersion`` (a named tuple): a dictionary hit, not a format."""


def _version_text(version: Any) -> str:
    text = f"{version.major}.{version.minor}"
    if len(_VERSIONS) < 16:
        _VERSIONS[version] = text
    return text


def _location(url: Any, raw_headers: Any) -> str | None:
    """A redirect's ``Location``, joined to the URL it answered."""
    for name, value in raw_headers:
        if name.lower() == b"location":
            return str(url.join(type(url)(value.decode("latin-1"))))
    return None


class AiohttpInstrumentation(Instrumentation):
    """Times every ``aiohttp`` request: directly where the version is known, else through a
    ``TraceConfig`` added to every new session (``net_aiohttp_signals``)."""

    def install(self, aiohttp: Any) -> None:
        if _direct_supported(aiohttp):
            self._install_direct(aiohttp)
        else:
            from hawkwatch.agent.plugins.net_aiohttp_signals import install_signals

            install_signals(self, aiohttp)

    def _install_direct(self, aiohttp: Any) -> None:
        finish, get_loop, on_error = self._finish, self._get_loop, self._on_error
        connector = aiohttp.TCPConnector
        self.replace(
            aiohttp.ClientSession,
            "_request",
            _wrap_request(
                aiohttp.ClientSession._request,
                finish,
                get_loop,
                on_error,
                sampled=self._sampled,
                skips=self._skips,
                tally=self._tally,
            ),
        )
        self.replace(
            connector,
            "_resolve_host",
            _wrap_resolve(connector._resolve_host, aiohttp.helpers.is_ip_address),
        )
        self.replace(connector, "_create_connection", _wrap_connect(connector._create_connection))
        self.replace(aiohttp.ClientRequest, "send", _wrap_send(aiohttp.ClientRequest.send, finish))
        response = aiohttp.ClientResponse
        self.replace(response, "start", _wrap_start(response.start, finish, on_error))


def _wrap_request(  # noqa: PLR0915 - see _request
    original: Any,
    finish: Finish,
    get_loop: Callable[[], object | None],
    on_error: OnError,
    *,
    sampled: Sampled,
    skips: dict[object, int],
    tally: Tally,
) -> Callable[..., Any]:
    """``allow_redirects`` and ``data`` are taken by name because aiohttp's ``get``/``post``…
    always pass one of them: with no other keyword, the original is called without a
    dictionary of keywords to build and unpack (under callgrind ~2,500 instructions of the
    ~3,300 a pass-through wrapper with ``**kwargs`` cost)."""
    lists = tally.lists

    async def _request(  # noqa: PLR0915 - one frame: each helper would be a call per request
        session: Any,
        method: str,
        str_or_url: Any,
        *,
        allow_redirects: bool = True,
        data: Any = None,
        **kwargs: Any,
    ) -> Any:
        request = (
            original(session, method, str_or_url, allow_redirects=allow_redirects, data=data,
                     **kwargs) if kwargs
            else original(session, method, str_or_url, allow_redirects=allow_redirects, data=data)
        )  # fmt: skip
        try:
            origin = _origins.get(str_or_url)  # (text or aiohttp's URL: both hash)
            if origin is None:
                origin = _origin(session, str_or_url)
            left = skips.get(origin, 0)
            if left > 0:  # untraced (``Sampler.skips``: no call)
                skips[origin] = left - 1
                traced = False
            else:
                traced = sampled(origin)
        except Exception as exc:  # never into the request
            on_error(exc)
            return await request
        if not traced:  # no object of ours: counted in the tally when it ends
            start = _clock()
            try:
                response = await request
            except BaseException as exc:
                _untraced_failed(method, str_or_url, origin, start, exc=exc, finish=finish)
                raise
            try:
                if not response._closed:  # it ends when aiohttp gives its connection back
                    _when_released(response, partial(
                        _untraced_ended, response.status, response.content,
                        (origin, method, str_or_url, start), tally, finish, on_error,
                    ))  # fmt: skip
                elif (total := _clock() - start) < _SLOW_NS:  # ended with its head: counted
                    key = (origin, method, response.status, "aiohttp", 0)
                    items = lists.get(key) or tally.new_key(key, str_or_url)
                    items.append(total)
                    items.append(getattr(response.content, "total_bytes", None))
                else:  # slow: a record
                    begun = (origin, method, str_or_url, start)
                    _untraced_ended(response.status, response.content, begun, tally, finish,
                                    on_error)  # fmt: skip
            except Exception as exc:  # never into the request
                on_error(exc)
            return response
        previous, hop = _current.get(), None
        try:
            hop = _Hop("aiohttp", method.upper(), "")
            hop.url_object, hop.origin = str_or_url, origin  # ``send`` puts the request's own URL
            describe_context(hop, get_loop, 1)
            _current.set(hop)
            _tracing.add(hop)
        except Exception as exc:  # never into the request
            on_error(exc)
        try:
            return await request
        except BaseException as exc:
            last = _current.get()
            if last is not None and last is not previous and not last.finished:
                last.fail(exc)
                last.finished = True
                finish(last)
            raise
        finally:
            _current.set(previous)
            _tracing.discard(hop)

    return _request


def _untraced_failed(
    method: str, url: Any, origin: str, start: int, *, exc: BaseException, finish: Finish
) -> None:
    """An untraced request that raised: an ``Untraced``, for its record."""
    untraced = Untraced("aiohttp", method.upper(), "", start)
    untraced.url_object, untraced.origin, untraced.key = url, origin, origin
    untraced.on_loop_thread = True
    untraced.fail(exc)
    untraced.finished = True
    finish(untraced)


def _when_released(response: Any, callback: Callable[[], None]) -> None:
    """Call ``callback`` when aiohttp gives the response's connection back (its body's end of
    file, or its release or close); now if it has none left. The callback must not hold the
    response: the connection it sits on is the response's, and a cycle through an object with
    a finalizer (a response, a connection) would leave it to the collector's passes."""
    connection = response.connection
    if connection is None:
        callback()
    else:
        connection.add_callback(callback)


def _untraced_ended(  # noqa: PLR0917 - bound by ``partial``, positionally
    status: int,
    content: Any,
    begun: tuple[str, str, Any, int],
    tally: Tally,
    finish: Finish,
    on_error: OnError,
) -> None:
    """An untraced request's body ended (now, or where ``_when_released`` called it; ``content``:
    the response's stream): counted in the tally, or, slow (``SLOW_REQUEST_MS``), an
    ``Untraced`` for its record."""
    try:
        origin, method, url, start = begun
        end = _clock()
        size = getattr(content, "total_bytes", None)
        if end - start < _SLOW_NS:
            key = (origin, method, status, "aiohttp", 0)
            items = tally.lists.get(key) or tally.new_key(key, url)
            items.append(end - start)
            items.append(size)
            return
        untraced = Untraced("aiohttp", method.upper(), "", start)
        untraced.url_object, untraced.origin, untraced.key = url, origin, origin
        untraced.on_loop_thread, untraced.status = True, status
        untraced.response_end, untraced.response_bytes = end, size
        untraced.finished = True
        finish(untraced)
    except Exception as exc:  # (aiohttp's ``_notify_release`` would hide it)
        on_error(exc)


_origins: dict[str, str] = {}
"""``scheme://host:port`` by absolute URL text: the same URLs come again and again."""


def _origin(session: Any, url: Any) -> str:
    """The sampler's key of a request: ``scheme://host:port`` of its URL (or the session's
    base URL for a relative one); the URL text when it cannot be parsed."""
    text = str(url)
    scheme, found, rest = text.partition("://")
    if not found:
        base = getattr(session, "_base_url", None)
        return text if base is None else _origin(None, base)
    authority = rest.partition("/")[0].partition("?")[0].partition("#")[0]
    origin = f"{scheme.lower()}://{authority.rpartition('@')[2].lower()}"
    if type(url) is str:
        if len(_origins) >= 1024:
            _origins.clear()
        _origins[url] = origin
    return origin


def _wrap_resolve(original: Any, is_ip_address: Callable[[str], bool]) -> Callable[..., Any]:
    """Plain functions, these four: with no hop (no request traced here) they hand aiohttp the
    original's own coroutine, adding a call but no coroutine frame to await."""

    def _resolve_host(conn: Any, host: str, *args: Any, **kwargs: Any) -> Any:
        hop = _current.get() if _tracing else None
        if hop is None or is_ip_address(host):
            return original(conn, host, *args, **kwargs)
        return timed(hop, conn, host, *args, **kwargs)

    async def timed(hop: _Hop, conn: Any, host: str, *args: Any, **kwargs: Any) -> Any:
        hop.dns_start = _clock()
        result = await original(conn, host, *args, **kwargs)
        hop.dns_end = _clock()
        return result

    return _resolve_host


def _wrap_connect(original: Any) -> Callable[..., Any]:
    def _create_connection(conn: Any, *args: Any, **kwargs: Any) -> Any:
        hop = _current.get() if _tracing else None
        if hop is None:
            return original(conn, *args, **kwargs)
        return timed(hop, conn, *args, **kwargs)

    async def timed(hop: _Hop, conn: Any, *args: Any, **kwargs: Any) -> Any:
        hop.connect_start = _clock()
        protocol = await original(conn, *args, **kwargs)
        if hop.dns_end is not None:
            hop.connect_start = hop.dns_end  # resolving is inside: its own phase
        hop.connect_end = _clock()
        hop.reused = False
        return protocol

    return _create_connection


def _wrap_send(original: Any, finish: Finish) -> Callable[..., Any]:
    def send(request: Any, conn: Any) -> Any:
        if not _tracing:
            return original(request, conn)
        hop = _current.get()
        if hop is None:
            return original(request, conn)
        return timed(hop, request, conn)

    async def timed(hop: _Hop, request: Any, conn: Any) -> Any:
        now = _clock()
        if hop.finished or hop.response_start is not None:  # a redirect: the next hop
            hop = _follow(hop, now, finish)
        hop.request_start = now
        if hop.reused is None:
            hop.reused = True
        hop.url_object = request.url
        response = await original(request, conn)
        hop.request_end = _clock()
        hop.request_headers = request.headers  # as sent
        return response

    return send


def _wrap_start(original: Any, finish: Finish, on_error: OnError) -> Callable[..., Any]:
    def start(response: Any, connection: Any) -> Any:
        if not _tracing:
            return original(response, connection)
        hop = _current.get()
        if hop is None:
            return original(response, connection)
        return timed(hop, response, connection)

    async def timed(hop: _Hop, response: Any, connection: Any) -> Any:
        result = await original(response, connection)
        hop.response_start = _clock()
        hop.status, hop.head = response.status, response.version
        hop.response = response.raw_headers  # described on the scheduler thread; not the
        # response: it is finalized on the loop, as without us
        if response._closed:  # the body came with the head: it ended
            _end_traced(response.content, hop, finish)
        else:
            _when_released(
                response, partial(_traced_released, response.content, hop, finish, on_error)
            )
        return result

    return start


def _end_traced(content: Any, hop: _Hop, finish: Finish) -> None:
    """A traced response's body ended (or it was released or closed unread): the bytes as
    aiohttp's stream (``content``) counted them (decoded, as ``read`` returns them)."""
    if hop.finished:  # a redirect's next ``send`` ended it already
        return
    if hop.response_bytes is None:
        hop.response_bytes = getattr(content, "total_bytes", None)
    hop.response_end = hop.response_end or _clock()
    hop.finished = True
    finish(hop)


def _traced_released(content: Any, hop: _Hop, finish: Finish, on_error: OnError) -> None:
    try:
        _end_traced(content, hop, finish)
    except Exception as exc:  # aiohttp's ``_notify_release`` would hide it
        on_error(exc)


_KEYWORDS: Final = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD)
_NAMED: Final = (("allow_redirects", True), ("data", None))
"""``ClientSession._request``'s keywords the wrapper takes by name, with their defaults."""


def _direct_supported(aiohttp: Any) -> bool:
    """Whether this aiohttp has the coroutines the direct instrumentation wraps, as expected."""
    try:
        major, minor = (int(part) for part in aiohttp.__version__.split(".")[:2])
        if not (3, 9) <= (major, minor) < (4, 0):
            return False
        for owner, name, parameters in _SHAPES:
            function = getattr(getattr(aiohttp, owner), name)
            if not inspect.iscoroutinefunction(function):
                return False
            names = tuple(inspect.signature(function).parameters)[: len(parameters)]
            if names != parameters:
                return False
        request = inspect.signature(aiohttp.ClientSession._request).parameters
        if any(p.kind not in _KEYWORDS for p in list(request.values())[3:]):  # by keyword
            return False
        for name, default in _NAMED:  # the wrapper passes them on by name, always
            if request[name].kind is not inspect.Parameter.KEYWORD_ONLY:
                return False
            if request[name].default is not default:
                return False
        response = aiohttp.ClientResponse  # bodies end where the connection is given back
        if not isinstance(response.__dict__.get("connection"), property):
            return False
        if response.__dict__.get("_closed") is not True:  # a class default, before ``start``
            return False
        add_callback = aiohttp.connector.Connection.add_callback
        if tuple(inspect.signature(add_callback).parameters) != ("self", "callback"):
            return False
        return callable(aiohttp.helpers.is_ip_address)
    except (AttributeError, KeyError, TypeError, ValueError):
        return False


def _follow(hop: _Hop, now: int, finish: Finish) -> _Hop:
    """The next hop of a redirect chain (the one before ends here if its body did not)."""
    follow = _Hop("aiohttp", hop.method, "", fetch_start=hop.response_end or now)
    follow.frames, follow.thread, follow.task = hop.frames, hop.thread, hop.task
    follow.on_loop_thread, follow.client = hop.on_loop_thread, hop.client
    if not hop.finished:
        hop.response_end = hop.response_end or now
        hop.finished = True
        finish(hop)
    _current.set(follow)
    return follow
