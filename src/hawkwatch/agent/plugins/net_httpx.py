"""Requests made through httpx (sync and async), timed by httpcore's ``trace`` extension.

``Client.send`` and ``AsyncClient.send`` are wrapped to put a tracer in the request's extensions
(chaining one the app set). httpx copies extensions to redirect requests, so one tracer follows
the chain; each ``send_request_headers`` after a closed response begins a new hop. Events used
(``detectors.md`` §6.4): ``connect_tcp`` and ``start_tls`` (connection), ``send_request_headers``,
``send_request_body``, ``receive_response_headers``, ``receive_response_body``,
``response_closed`` and their ``failed`` twins. The sync transport resolves names in the
request's thread, so DNS is timed by the socket layer (``net_stdlib``); the async one resolves
in a worker thread, so there DNS is inside ``tcp``. Queue = from ``send`` (or the previous hop's
end) to the hop's first event: pool waiting plus httpx's own preparation.
"""

from __future__ import annotations

import inspect
import sys
import time
from collections.abc import Callable
from itertools import chain
from typing import Any, Final

from hawkwatch.agent.plugins import net_stdlib
from hawkwatch.agent.plugins.net_patch import Finish, Instrumentation, OnError
from hawkwatch.agent.plugins.net_timeline import Timeline, describe_context
from hawkwatch.agent.plugins.net_untraced import Tally, Untraced
from hawkwatch.model.network_rules import SLOW_REQUEST_MS

_clock = time.perf_counter_ns
_SLOW_NS: Final = int(SLOW_REQUEST_MS * 1e6)
"""An untraced request this long gets a record (the monitor's slow-request threshold)."""


class _Hop(Timeline):
    """One request of a ``send`` (a redirect makes several). What httpx and httpcore give is
    kept as it is (the request, the response head) and described in ``to_record``."""

    __slots__ = ()

    def complete(self) -> None:
        request = self.request
        if request is not None:
            self.method, self.url = request.method, _url_text(request.url)
            if not self.request_bytes:
                self.request_bytes = _request_bytes(request)
            self.request = None
        if self.head is not None:
            _describe(self, *self.head)
            self.head = None


class _Tracer:
    """The hops of one ``send`` call, stamped by httpcore's trace events.

    ``on_event`` (sync) or ``on_event_async`` is the request's ``trace`` extension; the app's
    own callback (``previous``) is called after ours, and what it raises reaches httpcore as it
    would without us.
    """

    __slots__ = ("ended", "finish", "hops", "is_async", "on_error", "previous", "returned",
                 "tcp_started", "traced")  # fmt: skip

    def __init__(self, request: Any, finish: Finish, previous: Any, on_error: OnError) -> None:
        self.is_async = False  # the loop's thread: no socket-layer stamps (DNS is elsewhere)
        self.finish = finish
        self.on_error = on_error
        self.previous = previous
        hop = _Hop("httpx", request.method, "")
        hop.request = request
        self.hops = [hop]
        self.tcp_started: int | None = None
        self.returned = False
        self.ended = False
        self.traced = False
        """Timed by the trace extension from here on (``net_httpcore``: HTTP/2)."""

    @property
    def hop(self) -> _Hop:
        return self.hops[-1]

    def on_event(self, name: str, info: dict[str, Any]) -> None:
        """One dictionary look-up per event (most need nothing), then the app's callback."""
        handler = _handlers.get(name) or _learn(name)
        if handler is not _ignore:
            try:
                handler(self, name, info)
            except Exception as exc:  # never into the request
                self.on_error(exc)
        if self.previous is not None:
            self.previous(name, info)

    async def on_event_async(self, name: str, info: dict[str, Any]) -> None:
        handler = _handlers.get(name) or _learn(name)
        if handler is not _ignore:
            try:
                handler(self, name, info)
            except Exception as exc:  # never into the request
                self.on_error(exc)
        if self.previous is not None:
            result = self.previous(name, info)
            if inspect.isawaitable(result):
                await result

    def next_hop(self, now: int) -> _Hop:
        previous = self.hops[-1]
        previous.complete()  # its Location is the next hop's URL
        hop = _Hop("httpx", previous.method, previous.redirect_to or previous.url,
                   fetch_start=previous.response_end or now)  # fmt: skip
        hop.frames, hop.thread, hop.task = previous.frames, previous.thread, previous.task
        hop.on_loop_thread = previous.on_loop_thread
        self.hops.append(hop)
        return hop

    def end(self, response: Any, exc: BaseException | None) -> None:
        """Hand every hop over once: when ``send`` ended and the last response was closed."""
        if self.ended:
            return
        hop = self.hops[-1]
        if exc is not None:
            if hop.error is None:
                hop.fail(exc)
        elif response is not None and response.is_closed:
            hop.response_bytes = response.num_bytes_downloaded
            if len(self.hops) == 1 and not response.history:
                hop.request = response.request
            else:
                history = [*response.history, response]
                for each, answer in zip(self.hops, history, strict=False):
                    each.request = answer.request
        elif response is not None:
            self.returned = True  # streamed: ends at ``response_closed``
            return
        self.ended = True
        for each in self.hops:
            each.finished = True
            self.finish(each)


Handler = Callable[[_Tracer, str, dict[str, Any]], None]


def _connect_started(tracer: _Tracer, name: str, info: dict[str, Any]) -> None:
    tracer.tcp_started = _clock()
    if not tracer.is_async:
        net_stdlib._local.connecting = tracer.hops[-1]


def _connect_complete(tracer: _Tracer, name: str, info: dict[str, Any]) -> None:
    net_stdlib._local.connecting = None
    hop = tracer.hops[-1]
    hop.connect_start = hop.connect_start or tracer.tcp_started
    hop.connect_end = _clock()
    hop.reused = False


def _tls_started(tracer: _Tracer, name: str, info: dict[str, Any]) -> None:
    tracer.hops[-1].tls_start = _clock()


def _tls_complete(tracer: _Tracer, name: str, info: dict[str, Any]) -> None:
    tracer.hops[-1].tls_end = _clock()


def _headers_started(tracer: _Tracer, name: str, info: dict[str, Any]) -> None:
    now = _clock()
    hop = tracer.hops[-1]
    if hop.response_end is not None:  # a redirect: the next hop begins
        hop = tracer.next_hop(now)
    hop.request_start = now
    if hop.reused is None:
        hop.reused = True


def _body_sent(tracer: _Tracer, name: str, info: dict[str, Any]) -> None:
    tracer.hops[-1].request_end = _clock()


def _head_received(tracer: _Tracer, name: str, info: dict[str, Any]) -> None:
    hop = tracer.hops[-1]
    hop.response_start = _clock()
    hop.head = (name, info.get("return_value"))


def _body_received(tracer: _Tracer, name: str, info: dict[str, Any]) -> None:
    hop = tracer.hops[-1]
    hop.response_end = hop.response_end or _clock()


def _closed(tracer: _Tracer, name: str, info: dict[str, Any]) -> None:
    hop = tracer.hops[-1]
    hop.response_end = hop.response_end or _clock()
    if tracer.returned:
        tracer.end(None, None)


def _failed(tracer: _Tracer, name: str, info: dict[str, Any]) -> None:
    net_stdlib._local.connecting = None
    tracer.hops[-1].fail(info.get("exception") or RuntimeError("failed"))


_EVENTS: Final[dict[str, Handler]] = {
    "connect_tcp.started": _connect_started,
    "connect_tcp.complete": _connect_complete,
    "start_tls.started": _tls_started,
    "start_tls.complete": _tls_complete,
    "send_request_headers.started": _headers_started,
    "send_request_body.complete": _body_sent,
    "receive_response_headers.complete": _head_received,
    "receive_response_body.complete": _body_received,
    "response_closed.complete": _closed,
}
_handlers: dict[str, Handler] = {}
"""Full event names (``http11.send_request_headers.started``) to handlers, learned as seen."""


def _ignore(tracer: _Tracer, name: str, info: dict[str, Any]) -> None:
    """Events that mark nothing (``send_request_body.started``…): not even called."""


def _learn(name: str) -> Handler:
    event = name.partition(".")[2]
    handler = _EVENTS.get(event) or (_failed if event.endswith(".failed") else _ignore)
    if len(_handlers) < 512:
        _handlers[name] = handler
    return handler


def _request_bytes(request: Any) -> int:
    """Head and declared body bytes, from the headers' own list when it is what httpx keeps
    (raw name, lowered name, value): ``raw`` and ``get`` each build or scan a list again."""
    headers = request.headers
    kept = getattr(headers, "_list", None)
    if not (isinstance(kept, list) and kept and len(kept[0]) == 3):
        head = sum(len(k) + len(v) + 4 for k, v in headers.raw)
        length = headers.get("content-length")
        return head + (int(length) if length and length.isdigit() else 0)
    total = 0
    for raw_name, name, value in kept:
        total += len(raw_name) + len(value) + 4
        if name == b"content-length" and value.isdigit():
            total += int(value)
    return total


def _describe(hop: Timeline, name: str, value: Any) -> None:
    if not isinstance(value, tuple):
        return
    if name.startswith("http2.") and len(value) == 2:
        hop.http_version, (hop.status, headers) = "2", value
    elif len(value) == 4:
        version, hop.status, _, headers = value
        hop.http_version = _VERSIONS.get(version) or version.decode(
            "ascii", "replace"
        ).removeprefix("HTTP/")
    else:
        return
    hop.response_header_bytes = sum(map(len, chain.from_iterable(headers))) + 4 * len(headers)
    redirect = 300 <= (hop.status or 0) < 400
    if not redirect and hop.response_bytes is not None:
        return  # nothing more to look for (a read body was counted as it came)
    for key, header in headers:
        lowered = key.lower()
        if lowered == b"location" and redirect:
            hop.redirect_to = header.decode("latin-1")
        elif lowered == b"content-length" and header.isdigit() and hop.response_bytes is None:
            hop.response_bytes = int(header)


_VERSIONS: Final = {b"HTTP/1.1": "1.1", b"HTTP/1.0": "1.0"}
_urls: dict[Any, str] = {}
"""``str(url)`` by httpx's parsed form of it (a named tuple of strings, hashed quickly): the same
URLs come again and again, and each ``str`` joins them anew."""


def _url_text(url: Any) -> str:
    parsed = getattr(url, "_uri_reference", None)
    if parsed is None or type(parsed).__hash__ is None:
        return str(url)
    text = _urls.get(parsed)
    if text is None:
        if len(_urls) >= 1024:
            _urls.clear()
        text = _urls[parsed] = str(url)
    return text


def _origin_key(url: Any) -> object:
    """What tells ``scheme://host:port`` apart for the sampler, cheaply: httpx's parsed form."""
    parsed = getattr(url, "_uri_reference", None)
    if parsed is None:
        return f"{url.scheme}://{url.host}:{url.port}"
    return (parsed.scheme, parsed.host, parsed.port)


def _untraced(request: Any, origin: object, start: int, on_loop: bool) -> Untraced:
    untraced = Untraced("httpx", request.method, "", start)
    untraced.url_object, untraced.key = request.url, origin  # text on the scheduler thread
    untraced.on_loop_thread = on_loop
    return untraced


def _untraced_ended(  # noqa: PLR0917 - once per untraced request: positional
    request: Any,
    response: Any,
    origin: object,
    start: int,
    tally: Tally,
    finish: Finish,
    on_loop: bool,
) -> None:
    """An untraced ``send`` returned (a streamed response's total ends at its head): counted in
    the tally (``net_untraced.Tally``: no object of ours), or, slow
    (``SLOW_REQUEST_MS``), an ``Untraced`` for its record."""
    end = _clock()
    size = response.num_bytes_downloaded if response.is_closed else None
    if end - start < _SLOW_NS:
        key = (origin, request.method, response.status_code, "httpx", 0)
        tally.count(key, request.url, end - start, size)
        return
    untraced = _untraced(request, origin, start, on_loop)
    untraced.response_end, untraced.status = end, response.status_code
    untraced.response_bytes = size
    untraced.finished = True
    finish(untraced)


def _untraced_failed(
    request: Any, origin: object, start: int, exc: BaseException, finish: Finish, *, on_loop: bool
) -> None:
    untraced = _untraced(request, origin, start, on_loop)
    untraced.fail(exc)
    untraced.finished = True
    finish(untraced)


def _ours(trace: Any) -> _Tracer | None:
    tracer = getattr(trace, "__self__", None)
    return tracer if type(tracer) is _Tracer else None


class HttpxInstrumentation(Instrumentation):
    """Wraps ``httpx.Client.send`` and ``httpx.AsyncClient.send`` of an imported ``httpx``;
    httpcore's methods too where ``net_httpcore`` knows them (else: the trace extension)."""

    def install(self, httpx: Any) -> None:  # noqa: PLR0915 - the wrappers share one closure
        finish, get_loop, on_error = self._finish, self._get_loop, self._on_error
        sampled, tally = self._sampled, self._tally
        from hawkwatch.agent.plugins import net_httpcore

        httpcore = sys.modules.get("httpcore")  # httpx imported it (the agent never does)
        direct = httpcore is not None and net_httpcore.supported(httpcore)
        if direct:
            net_httpcore.install(self, httpcore)
        key = net_httpcore.EXTENSION

        def prepare(request: Any, is_async: bool) -> _Tracer | None:
            try:
                extensions = request.extensions  # the request's own copy (httpx makes one)
                previous = extensions.get("trace")
                if previous is not None and (ours := _ours(previous)) is not None:
                    if not ours.ended:
                        return None  # in flight: a client wrapping another
                    previous = ours.previous  # the same request sent again
                    if direct:  # the app's own back: our trace is engaged per request
                        net_httpcore._restore(extensions, ours)
                if direct and (ours := extensions.get(key)) is not None and not ours.ended:
                    return None
                tracer = _Tracer(request, finish, previous, on_error)
                describe_context(tracer.hops[0], get_loop, 2)
                tracer.is_async = is_async
                if direct:
                    extensions[key] = tracer
                else:
                    extensions["trace"] = tracer.on_event_async if is_async else tracer.on_event
            except Exception as exc:
                on_error(exc)
                return None
            return tracer

        original_sync = httpx.Client.send

        def send(client: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
            origin = _origin_key(request.url)
            if not sampled(origin):  # (on_loop_thread: no detector reads it for httpx)
                start = _clock()
                try:
                    response = original_sync(client, request, *args, **kwargs)
                except BaseException as exc:
                    _untraced_failed(request, origin, start, exc, finish, on_loop=False)
                    raise
                try:
                    _untraced_ended(request, response, origin, start, tally, finish, False)
                except Exception as exc:  # never into the request
                    on_error(exc)
                return response
            tracer = prepare(request, False)
            try:
                response = original_sync(client, request, *args, **kwargs)
            except BaseException as exc:
                if tracer is not None:
                    tracer.end(None, exc)
                raise
            if tracer is not None:
                tracer.end(response, None)
            return response

        original_async = httpx.AsyncClient.send

        async def send_async(client: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
            origin = _origin_key(request.url)
            if not sampled(origin):
                start = _clock()
                try:
                    response = await original_async(client, request, *args, **kwargs)
                except BaseException as exc:
                    _untraced_failed(request, origin, start, exc, finish, on_loop=True)
                    raise
                try:
                    _untraced_ended(request, response, origin, start, tally, finish, True)
                except Exception as exc:  # never into the request
                    on_error(exc)
                return response
            tracer = prepare(request, True)
            try:
                response = await original_async(client, request, *args, **kwargs)
            except BaseException as exc:
                if tracer is not None:
                    tracer.end(None, exc)
                raise
            if tracer is not None:
                tracer.end(response, None)
            return response

        self.replace(httpx.Client, "send", send)
        self.replace(httpx.AsyncClient, "send", send_async)
