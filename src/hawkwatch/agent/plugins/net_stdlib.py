"""Requests made through ``http.client``: urllib, urllib3 and requests (which sit on it).

None of these has hooks, so the socket layer is timed directly: ``socket.getaddrinfo`` (DNS),
``socket.socket.connect`` (TCP) and ``ssl.SSLContext.wrap_socket`` (TLS) stamp the connection
being opened by the current thread, if any — a thread-local read, nothing more, for every other
caller. ``HTTPConnection.connect`` (http.client's and urllib3's classes) says which connection is
being opened; ``putrequest`` starts a request, ``getresponse`` ends its send and marks the first
byte, and the response's reads and ``close`` mark the end of the body. A connection opened
before its first request (urllib3 opens HTTPS connections first) lends its phases to that
request; later requests on it are ``reused``. A connection that fails before any request was
written is recorded without method and path, with the phase it failed in. Pool queueing is not
observable here (null).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from itertools import chain

from hawkwatch.agent.plugins.net_patch import Finish, Instrumentation, Sampled
from hawkwatch.agent.plugins.net_timeline import Timeline, client_of, describe_context
from hawkwatch.agent.plugins.net_untraced import Untraced

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

_local = threading.local()
_clock = time.perf_counter_ns
#: Attributes of ours on http.client's connections and responses, None on their classes (so a
#: read needs no default) and set on instances as any attribute is: ``obj.__dict__`` would
#: turn an instance's inline attribute values (3.11, 3.12) into a dictionary, and every access
#: of the library's own attributes on it slower. ``_hawkwatch_tx``: the request in flight (on
#: connections and responses); ``_hawkwatch_opened``: phases of an unclaimed connect;
#: ``_hawkwatch_origin``: a connection's ``scheme://host:port``; ``_hawkwatch_client``: the
#: client (``Timeline.client``) that made its last traced request, for its untraced ones.
_CONNECTION_STATE = ("_hawkwatch_tx", "_hawkwatch_opened", "_hawkwatch_origin",
                     "_hawkwatch_client")  # fmt: skip
_RESPONSE_STATE = ("_hawkwatch_tx",)
_READERS = ("read", "readinto", "read1", "readline", "peek")


def _connecting() -> Timeline | None:
    return getattr(_local, "connecting", None)


class _Request(Timeline):
    """A request on an http.client connection. At its response the request path keeps the
    status, the version number (``head``) and the parsed headers (``response``), not the
    response itself (which dies with the app's last reference, on the app's thread, as it
    would without us); ``to_record`` describes them."""

    __slots__ = ()

    def complete(self) -> None:
        headers = self.response
        if headers is None:
            return
        self.response = None
        self.http_version = _VERSIONS.get(self.head) or str(self.head)
        raw = getattr(headers, "_headers", None)  # as received: items() re-parses every header
        if isinstance(raw, list):  # name: value\r\n per header, then \r\n
            self.response_header_bytes = sum(map(len, chain.from_iterable(raw))) + 4 * len(raw) + 2
        if 300 <= (self.status or 0) < 400:
            self.redirect_to = headers.get("Location")


_VERSIONS = {10: "1.0", 11: "1.1"}


class StdlibInstrumentation(Instrumentation):
    """Installs and removes the wrappers; ``finish`` receives every ended request."""

    # -- installation --------------------------------------------------------------------------

    def install_socket(self, socket: Any) -> None:
        """The socket layer, once ``socket`` is imported (by the app, or by ``http.client`` or
        ``ssl`` on their way in: before their own ``install_*``)."""
        self._patch(socket, "getaddrinfo", self._wrap_getaddrinfo)
        self._patch(socket.socket, "connect", self._wrap_socket_connect)

    def install_tls(self, ssl: Any) -> None:
        self._patch(ssl.SSLContext, "wrap_socket", self._wrap_tls)

    def install_http_client(self, client: Any) -> None:
        for name in _CONNECTION_STATE:
            self.add_default(client.HTTPConnection, name, None)
        for name in _RESPONSE_STATE:
            self.add_default(client.HTTPResponse, name, None)
        self.instrument_connection_class(client.HTTPConnection)
        self.instrument_connection_class(client.HTTPSConnection)
        self._patch(client.HTTPConnection, "putrequest", self._wrap_putrequest)
        self._patch(client.HTTPConnection, "send", self._wrap_send)
        self._patch(client.HTTPConnection, "getresponse", self._wrap_getresponse)
        for name in _READERS:
            self._patch(client.HTTPResponse, name, self._wrap_read)
        self._patch(client.HTTPResponse, "close", self._wrap_close)

    def instrument_connection_class(self, cls: type) -> None:
        """Time ``cls.connect`` when the class defines its own (urllib3's do)."""
        if "connect" in vars(cls):
            self._patch(cls, "connect", self._wrap_connect)

    def _patch(self, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        self.replace(owner, name, make(getattr(owner, name)))

    # -- the socket layer: stamps on the connection being opened -----------------------------

    @staticmethod
    def _wrap_getaddrinfo(original: Any) -> Any:
        def getaddrinfo(*args: Any, **kwargs: Any) -> Any:
            opening = _connecting()
            if opening is None:
                return original(*args, **kwargs)
            if opening.dns_start is None:
                opening.dns_start = _clock()
            result = original(*args, **kwargs)
            opening.dns_end = _clock()
            return result

        return getaddrinfo

    @staticmethod
    def _wrap_socket_connect(original: Any) -> Any:
        def connect(sock: Any, address: Any) -> None:
            opening = _connecting()
            if opening is None:
                return original(sock, address)  # type: ignore[no-any-return]
            if opening.connect_start is None:
                opening.connect_start = _clock()
            original(sock, address)
            opening.connect_end = _clock()
            return None

        return connect

    @staticmethod
    def _wrap_tls(original: Any) -> Any:
        def wrap_socket(context: Any, sock: Any, *args: Any, **kwargs: Any) -> Any:
            opening = _connecting()
            if opening is None:
                return original(context, sock, *args, **kwargs)
            opening.tls_start = _clock()
            wrapped = original(context, sock, *args, **kwargs)
            opening.tls_end = _clock()
            return wrapped

        return wrap_socket

    # -- connections and requests --------------------------------------------------------------

    def _wrap_connect(self, original: Any) -> Any:
        finish, get_loop, sampled = self._finish, self._get_loop, self._sampled

        def connect(conn: Any) -> Any:
            if _connecting() is not None:  # HTTPSConnection.connect calls HTTPConnection's
                return original(conn)
            in_flight = conn._hawkwatch_tx
            if in_flight is None:  # no request yet (urllib3 connects first): sample it now
                if conn._hawkwatch_opened is None and not sampled(_origin(conn)):
                    return _connect_untraced(conn, original, finish, get_loop)
            elif not in_flight.traced:  # a failure reaches send's wrapper
                in_flight.stage = "tcp"
                result = original(conn)
                in_flight.stage = "send"
                return result
            opening = in_flight or _Request("", "", _origin(conn))
            _local.connecting = opening
            try:
                result = original(conn)
            except BaseException as exc:
                _local.connecting = None
                if in_flight is None:  # no request yet (urllib3 connects first): say who called
                    describe_context(opening, get_loop, 1)
                _failed(opening, exc, finish)
                conn._hawkwatch_tx = None
                raise
            _local.connecting = None
            if in_flight is None:
                conn._hawkwatch_opened = opening
            else:
                in_flight.reused = False
            return result

        return connect

    def _wrap_putrequest(self, original: Any) -> Any:
        finish, get_loop, on_error = self._finish, self._get_loop, self._on_error
        sampled = self._sampled

        def putrequest(conn: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            try:
                _begin(conn, method, url, finish, get_loop, sampled=sampled)
            except Exception as exc:  # never into the app's request
                on_error(exc)
            return original(conn, method, url, *args, **kwargs)

        return putrequest

    def _wrap_send(self, original: Any) -> Any:
        finish = self._finish

        def send(conn: Any, data: Any) -> Any:
            timeline = conn._hawkwatch_tx
            if timeline is None:
                return original(conn, data)
            if type(data) is bytes:  # a file or an iterable: sent in blocks, each counted then
                timeline.request_bytes += len(data)
            else:
                try:
                    timeline.request_bytes += len(data)
                except TypeError:
                    pass
            try:
                return original(conn, data)
            except BaseException as exc:
                conn._hawkwatch_tx = None
                _failed(timeline, exc, finish)
                raise

        return send

    def _wrap_getresponse(self, original: Any) -> Any:
        finish = self._finish

        def getresponse(conn: Any) -> Any:
            timeline = conn._hawkwatch_tx
            if timeline is None:
                return original(conn)
            conn._hawkwatch_tx = None
            if not timeline.traced:  # only its status, and where its body ends
                timeline.stage = "ttfb"
                try:
                    response = original(conn)
                except BaseException as exc:
                    _failed(timeline, exc, finish)
                    raise
                timeline.status = response.status
                if response.fp is None:
                    _ended(timeline, finish)
                else:
                    response._hawkwatch_tx = timeline
                return response
            timeline.request_end = _clock()
            try:
                response = original(conn)
            except BaseException as exc:
                _failed(timeline, exc, finish)
                raise
            timeline.response_start = _clock()
            timeline.status, timeline.head = response.status, response.version
            timeline.response = response.msg  # described on the scheduler thread
            if response.fp is None:  # no body (HEAD, 204, 304, length 0): already closed
                _ended(timeline, finish)
            else:
                response._hawkwatch_tx = timeline
            return response

        return getresponse

    def _wrap_read(self, original: Any) -> Any:
        finish = self._finish

        def read(response: Any, *args: Any, **kwargs: Any) -> Any:
            timeline = response._hawkwatch_tx
            if timeline is None:
                return original(response, *args, **kwargs)
            try:
                result = original(response, *args, **kwargs)
            except BaseException as exc:
                response._hawkwatch_tx = None
                _failed(timeline, exc, finish)
                raise
            timeline.response_bytes = (timeline.response_bytes or 0) + (
                result if type(result) is int else len(result)
            )
            if response.fp is None:
                response._hawkwatch_tx = None
                _ended(timeline, finish)
            return result

        return read

    def _wrap_close(self, original: Any) -> Any:
        finish = self._finish

        def close(response: Any) -> Any:
            timeline = response._hawkwatch_tx
            if timeline is not None:
                response._hawkwatch_tx = None
                _ended(timeline, finish)
            return original(response)

        return close


def _origin(conn: Any) -> str:
    """``scheme://host:port`` of a connection (computed once per connection)."""
    origin: str | None = conn._hawkwatch_origin
    if origin is None:
        scheme = "https" if getattr(conn, "default_port", 80) == 443 else "http"  # urllib3's too
        host = conn.host if ":" not in conn.host else f"[{conn.host}]"
        origin = conn._hawkwatch_origin = f"{scheme}://{host}:{conn.port}"
    return origin


def _begin(
    conn: Any,
    method: str,
    url: str,
    finish: Finish,
    get_loop: Callable[[], object | None],
    *,
    sampled: Sampled,
) -> None:
    """A request starts on ``conn``: take over the phases of the connect that preceded it.

    Only stamps and references: the URL is joined, the response described and the call sites
    named on the scheduler thread (``Timeline.to_record``). A request the sampler leaves out
    (counted here, or at the connect that preceded it) is ``Untraced``.
    """
    unfinished = conn._hawkwatch_tx
    if unfinished is not None:  # an earlier request never read its response
        _ended(unfinished, finish)
    now = _clock()
    origin = conn._hawkwatch_origin or _origin(conn)
    opened = conn._hawkwatch_opened
    if opened is _UNTRACED or (opened is None and not sampled(origin)):
        conn._hawkwatch_opened = None
        untraced = Untraced("", method, url, now)
        untraced.origin = untraced.key = origin
        client = conn._hawkwatch_client
        if client is None:
            client = conn._hawkwatch_client = client_of(2)
        untraced.client = client
        untraced.on_loop_thread = get_loop() is not None
        untraced.stage = "send"
        conn._hawkwatch_tx = untraced
        return
    timeline = _Request("", method, url, now)  # library: the client found by describe_context
    timeline.origin = origin
    timeline.request_start = now
    if opened is not None:
        conn._hawkwatch_opened = None
        timeline.fetch_start = opened.fetch_start
        timeline.dns_start, timeline.dns_end = opened.dns_start, opened.dns_end
        timeline.connect_start, timeline.connect_end = opened.connect_start, opened.connect_end
        timeline.tls_start, timeline.tls_end = opened.tls_start, opened.tls_end
        timeline.reused = False
    else:
        timeline.reused = conn.sock is not None or None
    describe_context(timeline, get_loop, 2)
    conn._hawkwatch_client = timeline.client
    conn._hawkwatch_tx = timeline


_UNTRACED: Any = Untraced("", "", "", 0)
"""``_hawkwatch_opened`` of a connection opened for a request the sampler left out."""


def _connect_untraced(
    conn: Any, original: Any, finish: Finish, get_loop: Callable[[], object | None]
) -> Any:
    """Open a connection for an untraced request: untimed; a failure is the request's."""
    start = _clock()
    try:
        result = original(conn)
    except BaseException as exc:
        untraced = Untraced("", "", "", start)
        untraced.origin = untraced.key = _origin(conn)
        untraced.client = client_of(2)
        untraced.on_loop_thread = get_loop() is not None
        untraced.stage = "tcp"
        _failed(untraced, exc, finish)
        raise
    conn._hawkwatch_opened = _UNTRACED
    return result


def _failed(timeline: Timeline | Untraced, exc: BaseException, finish: Finish) -> None:
    if timeline.finished:
        return
    timeline.fail(exc)
    timeline.finished = True
    finish(timeline)


def _ended(timeline: Timeline | Untraced, finish: Finish) -> None:
    if timeline.finished:
        return
    timeline.response_end = _clock()
    timeline.finished = True
    finish(timeline)
