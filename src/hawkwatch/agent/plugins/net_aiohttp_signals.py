"""Requests made through aiohttp's client, timed by its ``TraceConfig`` signals.

``ClientSession.__init__`` is wrapped to add one ``TraceConfig`` of ours to every session (after
the app's own). Signals used (``detectors.md`` §6.4): ``on_request_start``, the connection's
``queued``/``create``/``reuseconn``, ``on_dns_resolvehost_start/end``, ``on_request_headers_sent``
and ``on_request_chunk_sent`` (send), ``on_request_end`` (response headers: first byte),
``on_response_chunk_received`` (receive), ``on_request_redirect`` (a hop ends) and
``on_request_exception``. The body ends when the response is read, released or closed
(``ClientResponse.read``/``release``/``close``). aiohttp opens TCP and TLS in one call, so for
``https`` the ``tcp`` phase includes the handshake and ``tls`` is null.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from hawkwatch.agent.plugins.net_patch import Finish, Instrumentation, OnError
from hawkwatch.agent.plugins.net_timeline import Timeline, describe_context

_clock = time.perf_counter_ns
_TX = "_hawkwatch_tx"


class AiohttpInstrumentation(Instrumentation):
    """Adds our trace config to every new ``aiohttp.ClientSession``; ends bodies on read/release."""

    def install(self, aiohttp: Any) -> None:
        trace_config = self._trace_config(aiohttp)
        original_init = aiohttp.ClientSession.__init__
        on_error = self._on_error

        def __init__(session: Any, *args: Any, **kwargs: Any) -> None:
            try:
                configs = list(kwargs.get("trace_configs") or ())
                if trace_config not in configs:
                    kwargs["trace_configs"] = [*configs, trace_config]
            except Exception as exc:
                on_error(exc)
            original_init(session, *args, **kwargs)

        self.replace(aiohttp.ClientSession, "__init__", __init__)
        finish = self._finish
        response_class = aiohttp.ClientResponse
        original_read = response_class.read

        async def read(response: Any) -> Any:
            body = await original_read(response)
            _end(response, finish)
            return body

        self.replace(response_class, "read", read)
        for name in ("release", "close"):
            original = getattr(response_class, name)
            self.replace(response_class, name, _ending(original, finish, on_error))


    def _trace_config(self, aiohttp: Any) -> Any:
        return _Signals(self._finish, self._get_loop, self._on_error).trace_config(aiohttp)


_HOP = "hawkwatch_hop"  # attribute of aiohttp's per-request trace context


class _Hop(Timeline):
    """One request of aiohttp's; what aiohttp gives is kept as it is (the URL object, the
    request headers as sent, the response's raw headers and version) and described in
    ``to_record``."""

    __slots__ = ()

    def complete(self) -> None:
        if self.url_object is not None:
            self.url, self.url_object = str(self.url_object), None
        if self.request_headers is not None:
            headers, self.request_headers = self.request_headers, None
            self.request_bytes += sum(len(k) + len(v) + 4 for k, v in headers.items())
        if self.response is not None:  # the raw headers, and the version in ``head``
            raw, self.response = self.response, None
            version = self.head
            if version is not None:
                self.http_version = f"{version.major}.{version.minor}"
            self.response_header_bytes = sum(len(k) + len(v) + 4 for k, v in raw)


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
            describe_context(hop, self.get_loop, sys._getframe(1))
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
            response.__dict__[_TX] = hop  # response: it is finalized on the loop, as without us

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


def _end(response: Any, finish: Finish) -> None:
    hop = response.__dict__.pop(_TX, None)
    if hop is None or hop.finished:
        return
    hop.response_end = hop.response_end or _clock()
    hop.finished = True
    finish(hop)


def _ending(original: Any, finish: Finish, on_error: OnError) -> Any:
    def ending(response: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            _end(response, finish)
        except Exception as exc:
            on_error(exc)
        return original(response, *args, **kwargs)

    return ending
