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


def _hop(context: SimpleNamespace) -> Timeline | None:
    return getattr(context, "hawkwatch_hop", None)


class _Signals:
    """Our handlers of aiohttp's trace signals; each request's hop lives in its trace context."""

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
            signal.append(self._guarded(handler))
        config.freeze()
        return config

    def _guarded(self, handler: Callable[[Timeline, SimpleNamespace, Any], None]) -> Any:
        on_error = self.on_error

        async def on_signal(session: Any, context: SimpleNamespace, params: Any) -> None:
            try:
                hop = _hop(context)
                if hop is not None or handler == self.request_start:
                    handler(hop, context, params)  # type: ignore[arg-type]
            except Exception as exc:  # never into the request
                on_error(exc)

        return on_signal

    def request_start(self, _: Timeline, context: SimpleNamespace, params: Any) -> None:
        hop = Timeline("aiohttp", params.method, str(params.url))
        hop.request_bytes = sum(len(k) + len(v) + 4 for k, v in params.headers.items())
        describe_context(hop, self.get_loop, sys._getframe(1))
        context.hawkwatch_hop = hop

    @staticmethod
    def dns_start(hop: Timeline, context: SimpleNamespace, params: Any) -> None:
        hop.dns_start = _clock()

    @staticmethod
    def dns_end(hop: Timeline, context: SimpleNamespace, params: Any) -> None:
        hop.dns_end = _clock()

    @staticmethod
    def connection_create_start(hop: Timeline, context: SimpleNamespace, params: Any) -> None:
        hop.connect_start = hop.connect_start or _clock()

    @staticmethod
    def connection_created(hop: Timeline, context: SimpleNamespace, params: Any) -> None:
        if hop.dns_end is not None:
            hop.connect_start = hop.dns_end
        hop.connect_end = hop.request_start = _clock()
        hop.reused = False

    @staticmethod
    def connection_reused(hop: Timeline, context: SimpleNamespace, params: Any) -> None:
        hop.reused = True
        hop.request_start = _clock()

    @staticmethod
    def headers_sent(hop: Timeline, context: SimpleNamespace, params: Any) -> None:
        hop.request_end = _clock()

    @staticmethod
    def chunk_sent(hop: Timeline, context: SimpleNamespace, params: Any) -> None:
        hop.request_end = _clock()
        hop.request_bytes += len(params.chunk)

    @staticmethod
    def request_end(hop: Timeline, context: SimpleNamespace, params: Any) -> None:
        _describe(hop, params.response)
        params.response.__dict__[_TX] = hop

    @staticmethod
    def chunk_received(hop: Timeline, context: SimpleNamespace, params: Any) -> None:
        hop.response_bytes = (hop.response_bytes or 0) + len(params.chunk)
        hop.response_end = _clock()

    def redirect(self, hop: Timeline, context: SimpleNamespace, params: Any) -> None:
        _describe(hop, params.response)
        hop.response_end = hop.response_start
        location = params.response.headers.get("Location", "")
        hop.redirect_to = str(params.url.join(type(params.url)(location)))
        follow = Timeline("aiohttp", hop.method, hop.redirect_to)
        follow.frames, follow.thread, follow.task = hop.frames, hop.thread, hop.task
        follow.on_loop_thread = hop.on_loop_thread
        context.hawkwatch_hop = follow
        hop.finished = True
        self.finish(hop)

    def failed(self, hop: Timeline, context: SimpleNamespace, params: Any) -> None:
        if hop.finished:
            return
        hop.fail(params.exception)
        hop.finished = True
        self.finish(hop)


def _describe(hop: Timeline, response: Any) -> None:
    hop.response_start = hop.response_start or _clock()
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
