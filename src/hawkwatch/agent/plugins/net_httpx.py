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
from typing import Any

from hawkwatch.agent.plugins import net_stdlib
from hawkwatch.agent.plugins.net_patch import Finish, Instrumentation, OnError
from hawkwatch.agent.plugins.net_timeline import Timeline, describe_context

_clock = time.perf_counter_ns


class _Tracer:
    """The hops of one ``send`` call, stamped by httpcore's trace events."""

    def __init__(self, request: Any, finish: Finish, previous: Any, on_error: OnError) -> None:
        self.is_async = False  # the loop's thread: no socket-layer stamps (DNS is elsewhere)
        self.finish = finish
        self.on_error = on_error
        self.previous = previous
        self.hops = [Timeline("httpx", request.method, str(request.url))]
        self.hops[0].request_bytes = _request_bytes(request)
        self.tcp_started: int | None = None
        self.returned = False
        self.ended = False

    @property
    def hop(self) -> Timeline:
        return self.hops[-1]

    def on_event(self, name: str, info: dict[str, Any]) -> None:
        try:
            self._stamp(name, info)
        except Exception as exc:  # never into the request
            self.on_error(exc)

    def _stamp(self, name: str, info: dict[str, Any]) -> None:
        layer, _, event = name.partition(".")
        now = _clock()
        hop = self.hop
        if event == "connect_tcp.started":
            self.tcp_started = now
            if not self.is_async:
                net_stdlib._local.connecting = hop
        elif event == "connect_tcp.complete":
            net_stdlib._local.connecting = None
            hop.connect_start = hop.connect_start or self.tcp_started
            hop.connect_end = now
            hop.reused = False
        elif event == "start_tls.started":
            hop.tls_start = now
        elif event == "start_tls.complete":
            hop.tls_end = now
        elif event == "send_request_headers.started":
            if hop.response_end is not None:  # a redirect: the next hop begins
                hop = self._next_hop(now)
            hop.request_start = now
            if hop.reused is None:
                hop.reused = True
        elif event == "send_request_body.complete":
            hop.request_end = now
        elif event == "receive_response_headers.complete":
            hop.response_start = now
            _describe(hop, layer, info.get("return_value"))
        elif event in ("receive_response_body.complete", "response_closed.complete"):
            hop.response_end = hop.response_end or now
            if event == "response_closed.complete" and self.returned:
                self.end(None, None)
        elif event.endswith(".failed"):
            net_stdlib._local.connecting = None
            hop.fail(info.get("exception") or RuntimeError("failed"))
        if self.previous is not None:
            self.previous(name, info)

    def _next_hop(self, now: int) -> Timeline:
        previous = self.hop
        hop = Timeline("httpx", previous.method, previous.redirect_to or previous.url,
                       fetch_start=previous.response_end or now)  # fmt: skip
        hop.frames, hop.thread, hop.task = previous.frames, previous.thread, previous.task
        hop.on_loop_thread = previous.on_loop_thread
        self.hops.append(hop)
        return hop

    def end(self, response: Any, exc: BaseException | None) -> None:
        """Write every hop once: when ``send`` ended and the last response was closed."""
        if self.ended:
            return
        if exc is not None:
            if self.hop.error is None:
                self.hop.fail(exc)
        elif response is not None and response.is_closed:
            self.hop.response_bytes = response.num_bytes_downloaded
            history = [*response.history, response]
            for hop, answer in zip(self.hops, history, strict=False):
                hop.method, hop.url = answer.request.method, str(answer.request.url)
        elif response is not None:
            self.returned = True  # streamed: ends at ``response_closed``
            return
        self.ended = True
        for hop in self.hops:
            hop.finished = True
            self.finish(hop)


def _request_bytes(request: Any) -> int:
    head = sum(len(k) + len(v) + 4 for k, v in request.headers.raw)
    length = request.headers.get("content-length")
    return head + (int(length) if length and length.isdigit() else 0)


def _describe(hop: Timeline, layer: str, value: Any) -> None:
    if not isinstance(value, tuple):
        return
    if layer == "http2" and len(value) == 2:
        hop.http_version, (hop.status, headers) = "2", value
    elif len(value) == 4:
        version, hop.status, _, headers = value
        hop.http_version = version.decode("ascii", "replace").removeprefix("HTTP/")
    else:
        return
    hop.response_header_bytes = sum(len(k) + len(v) + 4 for k, v in headers)
    for key, header in headers:
        if key.lower() == b"location" and 300 <= (hop.status or 0) < 400:
            hop.redirect_to = header.decode("latin-1")
        if key.lower() == b"content-length" and header.isdigit():
            hop.response_bytes = int(header)


class HttpxInstrumentation(Instrumentation):
    """Wraps ``httpx.Client.send`` and ``httpx.AsyncClient.send`` of an imported ``httpx``."""

    def install(self, httpx: Any) -> None:
        finish, get_loop, on_error = self._finish, self._get_loop, self._on_error

        def prepare(request: Any) -> _Tracer | None:
            try:
                previous = request.extensions.get("trace")
                if isinstance(previous, _BoundTrace):
                    return None  # already traced (a client wrapping another)
                tracer = _Tracer(request, finish, previous, on_error)
                describe_context(tracer.hop, get_loop, sys._getframe(1))
                request.extensions = {**request.extensions, "trace": _BoundTrace(tracer)}
            except Exception as exc:
                on_error(exc)
                return None
            return tracer

        original_sync = httpx.Client.send

        def send(client: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
            tracer = prepare(request)
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
            tracer = prepare(request)
            if tracer is not None:
                tracer.is_async = True
                request.extensions["trace"] = _AsyncBoundTrace(tracer)
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


class _BoundTrace:
    """The sync trace callback httpcore calls (a plain function)."""

    def __init__(self, tracer: _Tracer) -> None:
        self.tracer = tracer

    def __call__(self, name: str, info: dict[str, Any]) -> None:
        self.tracer.on_event(name, info)


class _AsyncBoundTrace(_BoundTrace):
    """The async twin: httpcore awaits the callback, and an app's async tracer is awaited too."""

    async def __call__(self, name: str, info: dict[str, Any]) -> None:  # type: ignore[override]
        previous, self.tracer.previous = self.tracer.previous, None
        self.tracer.on_event(name, info)
        self.tracer.previous = previous
        if previous is not None:
            result = previous(name, info)
            if inspect.isawaitable(result):
                await result
