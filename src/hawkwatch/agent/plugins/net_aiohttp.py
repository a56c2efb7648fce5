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
- ``ClientResponse.start``: the head was read (first byte); the body ends at its end of file
  (``_response_eof``: the last byte came, the bytes as aiohttp's stream counted them), or when
  the response is released or closed unread (``release``/``close``). ``read`` is not wrapped:
  every request, traced or not, calls aiohttp's own.
- Untraced requests (``net_sampling``) go through ``_request``'s wrapper and end at the body's
  end: no object of ours (an ``Ended`` tuple, queued in C); the hooks between return at once.
"""

from __future__ import annotations

import contextvars
import inspect
import time
from collections.abc import Callable
from itertools import chain
from typing import Any, Final

from hawkwatch.agent.plugins.net_patch import (
    Finish,
    FinishEnded,
    Instrumentation,
    OnError,
    Sampled,
)
from hawkwatch.agent.plugins.net_timeline import Timeline, describe_context
from hawkwatch.agent.plugins.net_untraced import Untraced

_clock = time.perf_counter_ns
_TX = "_hawkwatch_tx"
_current: contextvars.ContextVar[_Hop | None] = contextvars.ContextVar(
    "hawkwatch_aiohttp_hop", default=None
)
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
        self.add_default(aiohttp.ClientResponse, _TX, None)  # see net_stdlib: not __dict__
        if _direct_supported(aiohttp):
            self._install_direct(aiohttp)
            self._install_body_end(aiohttp.ClientResponse, direct=True)
        else:
            from hawkwatch.agent.plugins.net_aiohttp_signals import install_signals

            install_signals(self, aiohttp)
            self._install_body_end(aiohttp.ClientResponse, direct=False)

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
                finish_ended=self._finish_ended,
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
        self.replace(response, "start", _wrap_start(response.start, finish, self._finish_ended))

    def _install_body_end(self, response_class: Any, direct: bool) -> None:
        """The ends of a response's body: its end of file (where a request whose body is read
        ends: no wrapper on ``read`` for the direct instrumentation, whose untraced requests
        then call aiohttp's alone), its release or close (a request whose body was left
        unread); with ``TraceConfig``, its reading too."""
        finish, finish_ended, on_error = self._finish, self._finish_ended, self._on_error
        if not direct:
            original_read = response_class.read
            read_traced = _read_traced(original_read, finish, finish_ended)

            def read(response: Any) -> Any:
                hop = response._hawkwatch_tx
                if hop is None or type(hop) is tuple:  # untraced: ends at its end of file
                    return original_read(response)
                return read_traced(response)

            self.replace(response_class, "read", read)
        if callable(getattr(response_class, "_response_eof", None)):
            original_eof = response_class._response_eof

            def _response_eof(response: Any) -> Any:
                begun = response._hawkwatch_tx
                if begun is not None:
                    if type(begun) is tuple:  # untraced: ``_end``, inlined
                        response._hawkwatch_tx = None
                        size = getattr(response.content, "total_bytes", None)
                        finish_ended((*begun, response.status, _clock(), size))
                    else:
                        try:
                            _end_traced_body(response, begun, finish, finish_ended)
                        except Exception as exc:
                            on_error(exc)
                return original_eof(response)

            self.replace(response_class, "_response_eof", _response_eof)
        for name in ("release", "close"):
            original = getattr(response_class, name)
            self.replace(response_class, name, _ending(original, finish, finish_ended, on_error))


def _wrap_request(
    original: Any,
    finish: Finish,
    get_loop: Callable[[], object | None],
    on_error: OnError,
    *,
    sampled: Sampled,
    finish_ended: FinishEnded,
) -> Callable[..., Any]:
    async def _request(session: Any, method: str, str_or_url: Any, **kwargs: Any) -> Any:
        try:
            origin = _origins.get(str_or_url) if type(str_or_url) is str else None
            if origin is None:
                origin = _origin(session, str_or_url)
            traced = sampled(origin)
        except Exception as exc:  # never into the request
            on_error(exc)
            return await original(session, method, str_or_url, **kwargs)
        if not traced:  # no object of ours: a tuple on the response, an ``Ended`` at its end
            start = _clock()
            try:
                response = await original(session, method, str_or_url, **kwargs)
            except BaseException as exc:
                untraced = Untraced("aiohttp", method.upper(), "", start)
                untraced.url_object, untraced.origin, untraced.key = str_or_url, origin, origin
                untraced.on_loop_thread = True
                untraced.fail(exc)
                untraced.finished = True
                finish(untraced)
                raise
            # it ends with its body (``_response_eof``), or when released or closed
            response._hawkwatch_tx = ("aiohttp", method.upper(), str_or_url, origin, True, start)
            if getattr(response, "_closed", False):  # the body came with the head: ended
                _end(response, finish, finish_ended)
            return response
        previous = _current.get()
        try:
            hop = _Hop("aiohttp", method.upper(), "")
            hop.url_object, hop.origin = str_or_url, origin  # ``send`` puts the request's own URL
            describe_context(hop, get_loop, 1)
            _current.set(hop)
        except Exception as exc:  # never into the request
            on_error(exc)
        try:
            return await original(session, method, str_or_url, **kwargs)
        except BaseException as exc:
            last = _current.get()
            if last is not None and last is not previous and not last.finished:
                last.fail(exc)
                last.finished = True
                finish(last)
            raise
        finally:
            _current.set(previous)

    return _request


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
        hop = _current.get()
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
        hop = _current.get()
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


def _read_traced(original: Any, finish: Finish, finish_ended: FinishEnded) -> Callable[..., Any]:
    async def read(response: Any) -> Any:
        body = await original(response)
        hop = response._hawkwatch_tx
        if hop is not None and type(hop) is not tuple and hop.response_bytes is None:
            hop.response_bytes = len(body)
        _end(response, finish, finish_ended)
        return body

    return read


def _end_traced_body(response: Any, hop: _Hop, finish: Finish, finish_ended: FinishEnded) -> None:
    """A traced response's body ended (its end of file): the bytes as aiohttp's stream
    counted them (decoded, as ``read`` returns them)."""
    if hop.response_bytes is None:
        hop.response_bytes = getattr(response.content, "total_bytes", None)
    _end(response, finish, finish_ended)


def _wrap_start(original: Any, finish: Finish, finish_ended: FinishEnded) -> Callable[..., Any]:
    def start(response: Any, connection: Any) -> Any:
        hop = _current.get()
        if hop is None:
            return original(response, connection)
        return timed(hop, response, connection)

    async def timed(hop: _Hop, response: Any, connection: Any) -> Any:
        result = await original(response, connection)
        hop.response_start = _clock()
        hop.status, hop.head = response.status, response.version
        hop.response = response.raw_headers  # described on the scheduler thread; not the
        response._hawkwatch_tx = hop  # response: it is finalized on the loop, as without us
        if getattr(response, "_closed", False):  # the body came with the head: it ended
            _end_traced_body(response, hop, finish, finish_ended)
        return result

    return start


_KEYWORDS: Final = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD)


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
        request = inspect.signature(aiohttp.ClientSession._request).parameters.values()
        if any(p.kind not in _KEYWORDS for p in list(request)[3:]):  # passed on by keyword
            return False
        eof = aiohttp.ClientResponse._response_eof  # untraced requests end there
        if inspect.iscoroutinefunction(eof) or tuple(inspect.signature(eof).parameters) != (
            "self",
        ):
            return False
        return callable(aiohttp.helpers.is_ip_address)
    except (AttributeError, TypeError, ValueError):
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


def _end(response: Any, finish: Finish, finish_ended: FinishEnded) -> None:
    hop = response._hawkwatch_tx
    if hop is None:
        return
    response._hawkwatch_tx = None
    if type(hop) is tuple:  # untraced (``_request``): an ``Ended``, its bytes as aiohttp's
        size = getattr(response.content, "total_bytes", None)  # stream counted them
        finish_ended((*hop, response.status, _clock(), size))
        return
    if hop.finished:
        return
    hop.response_end = hop.response_end or _clock()
    hop.finished = True
    finish(hop)


def _ending(
    original: Any, finish: Finish, finish_ended: FinishEnded, on_error: OnError
) -> Callable[..., Any]:
    def ending(response: Any, *args: Any, **kwargs: Any) -> Any:
        if response._hawkwatch_tx is not None:  # else nothing to end: no call
            try:
                _end(response, finish, finish_ended)
            except Exception as exc:
                on_error(exc)
        return original(response, *args, **kwargs)

    return ending
