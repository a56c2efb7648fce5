"""aiohttp's requests timed by its ``TraceConfig`` signals: the fallback of ``net_aiohttp`` for
an aiohttp whose coroutines it does not know (the signals cost more: see there).

``ClientSession.__init__`` is wrapped to add one ``TraceConfig`` of ours to every session (after
the app's own). Signals used (``detectors.md`` §6.4): ``on_request_start``, the connection's
``queued``/``create``/``reuseconn``, ``on_dns_resolvehost_start/end``, ``on_request_headers_sent``
and ``on_request_chunk_sent`` (send), ``on_request_end`` (response headers: first byte),
``on_response_chunk_received`` (receive), ``on_request_redirect`` (a hop ends) and
``on_request_exception``. The body ends when the response is read, released or closed, or at
its end of file (``ClientResponse.read``/``release``/``close``/``_response_eof`` are wrapped:
for a version not known, names more likely to stay than the connection's callbacks the direct
instrumentation ends bodies with). aiohttp opens
TCP and TLS in one call, so for ``https`` the ``tcp`` phase includes the handshake and ``tls``
is null.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from hawkwatch.agent.plugins.net_aiohttp import _Hop
from hawkwatch.agent.plugins.net_patch import Finish, Instrumentation, OnError
from hawkwatch.agent.plugins.net_timeline import Timeline, describe_context

_clock = time.perf_counter_ns
_TX = "_hawkwatch_tx"  # the response's hop, once its head came


def install_signals(instrumentation: Instrumentation, aiohttp: Any) -> None:
    """Add our trace config to every new ``aiohttp.ClientSession`` (after the app's own)."""
    on_error = instrumentation._on_error
    trace_config = _Signals(
        instrumentation._finish, instrumentation._get_loop, on_error
    ).trace_config(aiohttp)
    original_init = aiohttp.ClientSession.__init__

    def __init__(session: Any, *args: Any, **kwargs: Any) -> None:
        try:
            configs = list(kwargs.get("trace_configs") or ())
            if trace_config not in configs:
                kwargs["trace_configs"] = [*configs, trace_config]
        except Exception as exc:
            on_error(exc)
        original_init(session, *args, **kwargs)

    instrumentation.replace(aiohttp.ClientSession, "__init__", __init__)
    _install_body_end(instrumentation, aiohttp.ClientResponse)


def _install_body_end(instrumentation: Instrumentation, response_class: Any) -> None:
    """The ends of a response's body: read, its end of file, its release or close."""
    finish, on_error = instrumentation._finish, instrumentation._on_error
    instrumentation.add_default(response_class, _TX, None)  # see net_stdlib: not __dict__
    original_read = response_class.read

    async def read(response: Any) -> Any:
        body = await original_read(response)
        hop = response._hawkwatch_tx
        if hop is not None and hop.response_bytes is None:
            hop.response_bytes = len(body)
        _end(response, finish)
        return body

    instrumentation.replace(response_class, "read", read)
    if callable(getattr(response_class, "_response_eof", None)):
        original_eof = response_class._response_eof

        def _response_eof(response: Any) -> Any:
            hop = response._hawkwatch_tx
            if hop is not None:
                try:
                    if hop.response_bytes is None:  # as aiohttp's stream counted them
                        hop.response_bytes = getattr(response.content, "total_bytes", None)
                    _end(response, finish)
                except Exception as exc:
                    on_error(exc)
            return original_eof(response)

        instrumentation.replace(response_class, "_response_eof", _response_eof)
    for name in ("release", "close"):
        instrumentation.replace(
            response_class, name, _ending(getattr(response_class, name), finish, on_error)
        )


def _end(response: Any, finish: Finish) -> None:
    hop = response._hawkwatch_tx
    if hop is None:
        return
    response._hawkwatch_tx = None
    if hop.finished:
        return
    hop.response_end = hop.response_end or _clock()
    hop.finished = True
    finish(hop)


def _ending(original: Any, finish: Finish, on_error: OnError) -> Callable[..., Any]:
    def ending(response: Any, *args: Any, **kwargs: Any) -> Any:
        if response._hawkwatch_tx is not None:  # else nothing to end: no call
            try:
                _end(response, finish)
            except Exception as exc:
                on_error(exc)
        return original(response, *args, **kwargs)

    return ending


_HOP = "hawkwatch_hop"  # attribute of aiohttp's per-request trace context


class _Signals:
    """Our handlers of aiohttp's trace signals; each request's hop lives in its trace context.

    Each handler is the coroutine aiohttp awaits: one frame, a stamp, nothing that can raise
    but what is guarded.
    """

    def __init__(
        self, finish: Finish, get_loop: Callable[[], object | None], on_error: OnError
    ) -> None:
        self.finish = finish
        self.get_loop = get_loop
        self.on_error = on_error

    def trace_config(self, aiohttp: Any) -> Any:
        config = aiohttp.TraceConfig()
        for signal, handler in (
            (config.on_request_start, self.request_start),
            (config.on_dns_resolvehost_start, self.dns_start),
            (config.on_dns_resolvehost_end, self.dns_end),
            (config.on_connection_create_start, self.connection_create_start),
            (config.on_connection_create_end, self.connection_created),
            (config.on_connection_reuseconn, self.connection_reused),
            (config.on_request_headers_sent, self.headers_sent),
            (config.on_request_chunk_sent, self.chunk_sent),
            (config.on_request_end, self.request_end),
            (config.on_response_chunk_received, self.chunk_received),
            (config.on_request_redirect, self.redirect),
            (config.on_request_exception, self.failed),
        ):
            signal.append(handler)
        config.freeze()
        return config

    async def request_start(self, session: Any, context: SimpleNamespace, params: Any) -> None:
        try:
            hop = _Hop("aiohttp", params.method, "")
            hop.url_object, hop.request_headers = params.url, params.headers
            describe_context(hop, self.get_loop, 1)
            setattr(context, _HOP, hop)
        except Exception as exc:  # never into the request
            self.on_error(exc)

    @staticmethod
    async def dns_start(session: Any, context: SimpleNamespace, params: Any) -> None:
        hop = getattr(context, _HOP, None)
        if hop is not None:
            hop.dns_start = _clock()

    @staticmethod
    async def dns_end(session: Any, context: SimpleNamespace, params: Any) -> None:
        hop = getattr(context, _HOP, None)
        if hop is not None:
            hop.dns_end = _clock()

    @staticmethod
    async def connection_create_start(session: Any, context: SimpleNamespace, params: Any) -> None:
        hop = getattr(context, _HOP, None)
        if hop is not None:
            hop.connect_start = hop.connect_start or _clock()

    @staticmethod
    async def connection_created(session: Any, context: SimpleNamespace, params: Any) -> None:
        hop = getattr(context, _HOP, None)
        if hop is not None:
            if hop.dns_end is not None:
                hop.connect_start = hop.dns_end
            hop.connect_end = hop.request_start = _clock()
            hop.reused = False

    @staticmethod
    async def connection_reused(session: Any, context: SimpleNamespace, params: Any) -> None:
        hop = getattr(context, _HOP, None)
        if hop is not None:
            hop.reused = True
            hop.request_start = _clock()

    @staticmethod
    async def headers_sent(session: Any, context: SimpleNamespace, params: Any) -> None:
        hop = getattr(context, _HOP, None)
        if hop is not None:
            hop.request_end = _clock()
            hop.request_headers = params.headers  # as sent (at the start: only the app's)

    async def chunk_sent(self, session: Any, context: SimpleNamespace, params: Any) -> None:
        hop = getattr(context, _HOP, None)
        if hop is not None:
            hop.request_end = _clock()
            try:
                hop.request_bytes += len(params.chunk)
            except Exception as exc:
                self.on_error(exc)

    @staticmethod
    async def request_end(session: Any, context: SimpleNamespace, params: Any) -> None:
        hop = getattr(context, _HOP, None)
        if hop is not None:
            hop.response_start = hop.response_start or _clock()
            response = params.response
            hop.status, hop.head = response.status, response.version
            hop.response = response.raw_headers  # described on the scheduler thread; not the
            response._hawkwatch_tx = hop  # response: it is finalized on the loop, as without us

    async def chunk_received(self, session: Any, context: SimpleNamespace, params: Any) -> None:
        hop = getattr(context, _HOP, None)
        if hop is not None:
            try:
                hop.response_bytes = (hop.response_bytes or 0) + len(params.chunk)
            except Exception as exc:
                self.on_error(exc)
            hop.response_end = _clock()

    async def redirect(self, session: Any, context: SimpleNamespace, params: Any) -> None:
        try:
            hop = getattr(context, _HOP, None)
            if hop is None:
                return
            hop.response_start = hop.response_start or _clock()
            hop.response = None
            _describe(hop, params.response)
            hop.response_end = hop.response_start
            location = params.response.headers.get("Location", "")
            hop.redirect_to = str(params.url.join(type(params.url)(location)))
            follow = _Hop("aiohttp", hop.method, hop.redirect_to)
            follow.frames, follow.thread, follow.task = hop.frames, hop.thread, hop.task
            follow.on_loop_thread = hop.on_loop_thread
            setattr(context, _HOP, follow)
            hop.finished = True
            self.finish(hop)
        except Exception as exc:
            self.on_error(exc)

    async def failed(self, session: Any, context: SimpleNamespace, params: Any) -> None:
        try:
            hop = getattr(context, _HOP, None)
            if hop is None or hop.finished:
                return
            hop.fail(params.exception)
            hop.finished = True
            self.finish(hop)
        except Exception as exc:
            self.on_error(exc)


def _describe(hop: Timeline, response: Any) -> None:
    hop.status = response.status
    version = response.version
    if version is not None:
        hop.http_version = f"{version.major}.{version.minor}"
    hop.response_header_bytes = sum(len(k) + len(v) + 4 for k, v in response.raw_headers)
