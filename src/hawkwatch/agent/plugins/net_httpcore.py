"""httpx's HTTP/1.1 requests timed in httpcore directly, with its ``trace`` extension only while
a connection opens (and for HTTP/2).

Why: a request with a ``trace`` extension makes httpcore call it twice per step (two names
formatted, an info dictionary, a coroutine check each), whatever the callback does: measured
(``benchmarks/network_instructions.py``, ``hooks`` column) that is most of what timing httpx cost.
So the tracer of each ``send`` (``net_httpx._Tracer``) rides in the request's extensions under
``EXTENSION`` (httpx hands the same dictionary to httpcore and to redirect requests), and the
methods that bound HTTP/1.1's phases are wrapped (httpcore 1.x, sync and async alike):

- ``HTTPConnection._connect``: the tracer is the request's ``trace`` extension for its
  duration (chained to the app's own): TCP, TLS (and, sync, DNS through the socket layer) are
  stamped by the same handlers as in the trace-only mode, failures included.
- ``HTTP11Connection._send_request_headers`` (send begins; a new hop after a response: a
  redirect), ``_send_request_body`` (send ends), ``_receive_response_headers`` (first byte; the
  version, status and headers), ``_receive_response_body`` (the body ends; an error there
  fails the hop), and the response stream's ``close`` (a streamed response ends).
- ``HTTP2Connection.handle_request``: the tracer becomes the request's ``trace`` extension for
  the rest of the request (``_Tracer.traced``), and the trace-only handlers time it.

An httpcore whose methods are not these (``supported``) gets the trace-only mode
(``net_httpx``). Errors the wrappers' own code meets go to ``on_error``, never to the app.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from hawkwatch.agent.plugins.net_httpx import HttpxInstrumentation, _Tracer

EXTENSION: Final = "hawkwatch.tracer"
_HTTP11: Final = (
    ("_send_request_headers", ("self", "request")),
    ("_send_request_body", ("self", "request")),
    ("_receive_response_headers", ("self", "request")),
    ("_receive_response_body", ("self", "request")),
)
_NO_INFO: Final[dict[str, Any]] = {}


def _modules(httpcore: Any) -> tuple[Any, Any, Any, Any] | None:
    """httpcore's sync and async connection and HTTP/1.1 modules, if loaded as expected."""
    names = ("_sync.connection", "_async.connection", "_sync.http11", "_async.http11")
    found = tuple(sys.modules.get(f"{httpcore.__name__}.{name}") for name in names)
    return None if None in found else found  # type: ignore[return-value]


def supported(httpcore: Any) -> bool:
    """Whether this httpcore has the methods wrapped here, with the parameters expected."""
    try:
        if not str(httpcore.__version__).startswith("1."):
            return False
        modules = _modules(httpcore)
        if modules is None:
            return False
        sync_conn, async_conn, sync11, async11 = modules
        expected: list[tuple[Any, str, tuple[str, ...], bool]] = [
            (sync_conn.HTTPConnection, "_connect", ("self", "request"), False),
            (async_conn.AsyncHTTPConnection, "_connect", ("self", "request"), True),
            (sync11.HTTP11ConnectionByteStream, "close", ("self",), False),
            (async11.HTTP11ConnectionByteStream, "aclose", ("self",), True),
        ]
        for step, step_parameters in _HTTP11:
            expected.append((sync11.HTTP11Connection, step, step_parameters, False))
            expected.append((async11.AsyncHTTP11Connection, step, step_parameters, True))
        for owner, name, parameters, is_async in expected:
            function = getattr(owner, name)
            if name == "_receive_response_body":
                kind_ok = (inspect.isasyncgenfunction if is_async else inspect.isgeneratorfunction)(
                    function
                )
            else:
                kind_ok = inspect.iscoroutinefunction(function) is is_async
            if not kind_ok or tuple(inspect.signature(function).parameters) != parameters:
                return False
        return True
    except (AttributeError, TypeError, ValueError):
        return False


def install(instrumentation: HttpxInstrumentation, httpcore: Any) -> None:
    """Wrap httpcore's methods (``supported`` said yes)."""
    from hawkwatch.agent.plugins import net_httpx as hx

    modules = _modules(httpcore)
    assert modules is not None
    sync_conn, async_conn, sync11, async11 = modules
    replace, on_error = instrumentation.replace, instrumentation._on_error

    def mark(tracer: _Tracer, handler: hx.Handler, info: dict[str, Any] = _NO_INFO) -> None:
        try:
            handler(tracer, "", info)
        except Exception as exc:  # never into the request
            on_error(exc)

    def failed(tracer: _Tracer, exc: BaseException) -> None:
        mark(tracer, hx._failed, {"exception": exc})

    # -- connecting: the trace extension, for the connection's events only ---------------

    def connect(original: Any) -> Callable[..., Any]:
        def _connect(conn: Any, request: Any) -> Any:
            extensions = request.extensions
            tracer = extensions.get(EXTENSION)
            if tracer is None or tracer.traced:
                return original(conn, request)
            extensions["trace"] = tracer.on_event
            try:
                return original(conn, request)
            finally:
                _restore(extensions, tracer)

        return _connect

    def connect_async(original: Any) -> Callable[..., Any]:
        def _connect(conn: Any, request: Any) -> Any:  # no tracer: the original's coroutine
            extensions = request.extensions
            tracer = extensions.get(EXTENSION)
            if tracer is None or tracer.traced:
                return original(conn, request)
            return traced(conn, request, extensions, tracer)

        async def traced(conn: Any, request: Any, extensions: Any, tracer: _Tracer) -> Any:
            extensions["trace"] = tracer.on_event_async
            try:
                return await original(conn, request)
            finally:
                _restore(extensions, tracer)

        return _connect

    replace(sync_conn.HTTPConnection, "_connect", connect(sync_conn.HTTPConnection._connect))
    replace(
        async_conn.AsyncHTTPConnection,
        "_connect",
        connect_async(async_conn.AsyncHTTPConnection._connect),
    )

    # -- HTTP/1.1: the steps of a request ------------------------------------------------

    for module, owner_name, is_async in (
        (sync11, "HTTP11Connection", False),
        (async11, "AsyncHTTP11Connection", True),
    ):
        owner = getattr(module, owner_name)
        make = _async_steps if is_async else _sync_steps
        for name, wrapper in make(owner, mark, failed).items():
            replace(owner, name, wrapper)
        stream = module.HTTP11ConnectionByteStream
        close_name = "aclose" if is_async else "close"
        replace(stream, close_name, _stream_close(getattr(stream, close_name), mark, is_async))

    # -- HTTP/2: the trace extension for the rest of the request -------------------------

    for name, owner_name in (("_sync.http2", "HTTP2Connection"),
                             ("_async.http2", "AsyncHTTP2Connection")):  # fmt: skip
        module = sys.modules.get(f"{httpcore.__name__}.{name}")
        owner = getattr(module, owner_name, None)
        if owner is not None and callable(getattr(owner, "handle_request", None)):
            is_async = owner_name.startswith("Async")
            replace(owner, "handle_request", _http2(owner.handle_request, is_async, on_error))


def _restore(extensions: dict[str, Any], tracer: _Tracer) -> None:
    """The app's own trace extension back (or none) after a connection opened."""
    if tracer.previous is None:
        extensions.pop("trace", None)
    else:
        extensions["trace"] = tracer.previous


def _sync_steps(owner: Any, mark: Any, failed: Any) -> dict[str, Callable[..., Any]]:
    from hawkwatch.agent.plugins import net_httpx as hx

    send_headers, send_body = owner._send_request_headers, owner._send_request_body
    receive_headers, receive_body = owner._receive_response_headers, owner._receive_response_body

    def _send_request_headers(conn: Any, request: Any) -> Any:
        tracer = request.extensions.get(EXTENSION)
        if tracer is not None and not tracer.traced:
            mark(tracer, hx._headers_started)
        return send_headers(conn, request)

    def _send_request_body(conn: Any, request: Any) -> Any:
        result = send_body(conn, request)
        tracer = request.extensions.get(EXTENSION)
        if tracer is not None and not tracer.traced:
            mark(tracer, hx._body_sent)
        return result

    def _receive_response_headers(conn: Any, request: Any) -> Any:
        result = receive_headers(conn, request)
        tracer = request.extensions.get(EXTENSION)
        if tracer is not None and not tracer.traced:
            mark(tracer, hx._head_received, {"return_value": result[:4]})  # as traced
        return result

    def _receive_response_body(conn: Any, request: Any) -> Any:
        chunks = receive_body(conn, request)
        tracer = request.extensions.get(EXTENSION)
        if tracer is None or tracer.traced:
            return chunks
        return _body(chunks, tracer, mark, failed, hx._body_received)

    return {
        "_send_request_headers": _send_request_headers,
        "_send_request_body": _send_request_body,
        "_receive_response_headers": _receive_response_headers,
        "_receive_response_body": _receive_response_body,
    }


def _async_steps(owner: Any, mark: Any, failed: Any) -> dict[str, Callable[..., Any]]:
    from hawkwatch.agent.plugins import net_httpx as hx

    send_headers, send_body = owner._send_request_headers, owner._send_request_body
    receive_headers, receive_body = owner._receive_response_headers, owner._receive_response_body

    # Plain functions handing over the original's coroutine when the request is not traced
    # here (no extra coroutine frame); httpcore awaits each at once, so a stamp made before
    # is made when it would be inside.

    def _send_request_headers(conn: Any, request: Any) -> Any:
        tracer = request.extensions.get(EXTENSION)
        if tracer is not None and not tracer.traced:
            mark(tracer, hx._headers_started)
        return send_headers(conn, request)

    def _send_request_body(conn: Any, request: Any) -> Any:
        tracer = request.extensions.get(EXTENSION)
        if tracer is None or tracer.traced:
            return send_body(conn, request)
        return body_sent(conn, request, tracer)

    async def body_sent(conn: Any, request: Any, tracer: _Tracer) -> Any:
        result = await send_body(conn, request)
        mark(tracer, hx._body_sent)
        return result

    def _receive_response_headers(conn: Any, request: Any) -> Any:
        tracer = request.extensions.get(EXTENSION)
        if tracer is None or tracer.traced:
            return receive_headers(conn, request)
        return head_received(conn, request, tracer)

    async def head_received(conn: Any, request: Any, tracer: _Tracer) -> Any:
        result = await receive_headers(conn, request)
        mark(tracer, hx._head_received, {"return_value": result[:4]})
        return result

    def _receive_response_body(conn: Any, request: Any) -> Any:
        chunks = receive_body(conn, request)
        tracer = request.extensions.get(EXTENSION)
        if tracer is None or tracer.traced:
            return chunks
        return _body_async(chunks, tracer, mark, failed, hx._body_received)

    return {
        "_send_request_headers": _send_request_headers,
        "_send_request_body": _send_request_body,
        "_receive_response_headers": _receive_response_headers,
        "_receive_response_body": _receive_response_body,
    }


def _body(
    chunks: Iterator[bytes], tracer: _Tracer, mark: Any, failed: Any, received: Any
) -> Iterator[bytes]:
    """The body's chunks as httpcore gives them; ``received`` marked at their end (passed in:
    an import statement here would run the import machinery's checks for every request)."""
    try:
        yield from chunks
    except GeneratorExit:  # the app stopped reading: not a failure
        raise
    except BaseException as exc:
        failed(tracer, exc)
        raise
    mark(tracer, received)


async def _body_async(
    chunks: AsyncIterator[bytes], tracer: _Tracer, mark: Any, failed: Any, received: Any
) -> AsyncIterator[bytes]:
    try:
        async for chunk in chunks:
            yield chunk
    except GeneratorExit:
        raise
    except BaseException as exc:
        failed(tracer, exc)
        raise
    mark(tracer, received)


def _stream_close(original: Any, mark: Any, is_async: bool) -> Callable[..., Any]:
    """The response stream's ``close``: the body ended (a streamed response: the hops too)."""
    from hawkwatch.agent.plugins import net_httpx as hx

    def tracer_of(stream: Any) -> _Tracer | None:
        request = getattr(stream, "_request", None)
        tracer = None if request is None else request.extensions.get(EXTENSION)
        return None if tracer is None or tracer.traced else tracer

    if is_async:

        def aclose(stream: Any) -> Any:
            tracer = tracer_of(stream)
            if tracer is None:
                return original(stream)  # its own coroutine: no frame of ours to await
            return closing(stream, tracer)

        async def closing(stream: Any, tracer: _Tracer) -> Any:
            try:
                return await original(stream)
            finally:
                mark(tracer, hx._closed)

        return aclose

    def close(stream: Any) -> Any:
        try:
            return original(stream)
        finally:
            tracer = tracer_of(stream)
            if tracer is not None:
                mark(tracer, hx._closed)

    return close


def _http2(original: Any, is_async: bool, on_error: Any) -> Callable[..., Any]:
    """HTTP/2's ``handle_request``: from here on the request is timed by its trace events."""

    def engage(request: Any) -> None:
        try:
            extensions = request.extensions
            tracer = extensions.get(EXTENSION)
            if tracer is not None and not tracer.traced:
                tracer.traced = True
                extensions["trace"] = tracer.on_event_async if is_async else tracer.on_event
        except Exception as exc:  # never into the request
            on_error(exc)

    if is_async:

        def handle_request_async(conn: Any, request: Any) -> Any:
            engage(request)
            return original(conn, request)  # its coroutine, awaited by the caller

        return handle_request_async

    def handle_request(conn: Any, request: Any) -> Any:
        engage(request)
        return original(conn, request)

    return handle_request
