"""Network monitor: every HTTP request's phases, sizes and errors (``network-transaction``).

Four client families are timed (``net_stdlib``: http.client, urllib, urllib3, requests;
``net_httpx``; ``net_aiohttp``); libraries imported after the agent started are instrumented as
their import completes (``PostImportHook``). Each ended request becomes one typed record,
redacted (``hawkwatch.model.urls``). The request's thread only queues the ended timeline (a
deque append); the scheduler thread turns them into records every ``DRAIN_INTERVAL_S`` and at
stop, while the app's threads wait on the network, so formatting costs a request nearly no wall
time. A process killed hard (SIGKILL) loses at most that interval's requests. The wrappers never
raise into the app: a failure is kept and raised on the scheduler thread, where
the runtime's firewall switches the monitor off. At stop and in a forked child the wrappers are
removed where they are still the outermost, and made inert otherwise (another tool wrapped
them after us: its wrapper keeps working).
"""

from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar, Final

from hawkwatch.agent.monitor import AgentContext, DeferredFailure
from hawkwatch.agent.plugins.net_aiohttp import AiohttpInstrumentation
from hawkwatch.agent.plugins.net_httpx import HttpxInstrumentation
from hawkwatch.agent.plugins.net_stdlib import StdlibInstrumentation
from hawkwatch.agent.plugins.net_timeline import Timeline

if TYPE_CHECKING:  # no importlib.abc: ~3 ms at start (importlib.resources, tempfile, shutil)
    from importlib.machinery import ModuleSpec

DRAIN_INTERVAL_S: Final = 0.2


def running_loop() -> object | None:
    """The asyncio loop running in this thread, without importing asyncio for apps that don't."""
    asyncio = sys.modules.get("asyncio")
    return None if asyncio is None else asyncio._get_running_loop()


class NetworkMonitor:
    name: ClassVar[str] = "network"

    def __init__(self) -> None:
        self._ctx: AgentContext | None = None
        self._keep_params: frozenset[str] = frozenset()
        self._failure = DeferredFailure()
        self._ended: deque[Timeline] = deque()
        capture = self._failure.capture
        self._stdlib = StdlibInstrumentation(self._finish, running_loop, capture)
        self._httpx = HttpxInstrumentation(self._finish, running_loop, capture)
        self._aiohttp = AiohttpInstrumentation(self._finish, running_loop, capture)
        self._hook: PostImportHook | None = None

    def start(self, ctx: AgentContext) -> None:
        self._ctx = ctx
        config = ctx.config.network
        self._keep_params = frozenset(
            name.strip() for name in config.keep_query_params.split(",") if name.strip()
        )
        self._stdlib.install()
        self._hook = PostImportHook(
            {
                "ssl": self._stdlib.install_tls,
                "http.client": self._stdlib.install_http_client,
                "urllib3.connection": self._instrument_urllib3,
                "httpx": self._httpx.install,
                "aiohttp": self._aiohttp.install,
            },
            self._failure.capture,
        )
        self._hook.install()
        ctx.every(1.0, self._failure.raise_if_failed, self)
        ctx.every(DRAIN_INTERVAL_S, self.drain, self)

    def _instrument_urllib3(self, module: ModuleType) -> None:
        for name in ("HTTPConnection", "HTTPSConnection"):
            self._stdlib.instrument_connection_class(getattr(module, name))

    def _finish(self, timeline: Timeline) -> None:
        if self._ctx is not None:
            self._ended.append(timeline)

    def drain(self) -> None:
        """Write the requests that ended since the last call (scheduler thread, and at stop).

        In one go: handing the GIL over every few records (``sleep(0)``) measured worse, each
        hand-over a round of wake-ups costing more kernel CPU than the wait it saves.
        """
        ctx, keep, ended = self._ctx, self._keep_params, self._ended
        if ctx is None or not ended:
            return
        wall_offset = time.time() - time.perf_counter_ns() / 1e9  # monotonic stamps to Unix s
        write, popleft = ctx.write, ended.popleft
        while ended:
            write(popleft().to_record(keep, wall_offset))

    def stop(self) -> None:
        try:
            self.drain()
        finally:
            self._remove()

    def after_fork_child(self) -> None:
        self._ended.clear()  # the parent's requests: the parent writes them
        self._remove()

    def _remove(self) -> None:
        self._ctx = None
        if self._hook is not None:
            self._hook.uninstall()
            self._hook = None
        for instrumentation in (self._aiohttp, self._httpx, self._stdlib):
            instrumentation.uninstall()


class PostImportHook:  # a MetaPathFinder by its find_spec
    """Calls ``callbacks[name](module)`` once the module ``name`` is imported (or already is).

    Finds the real spec with the other finders and wraps its loader's ``exec_module``; a
    callback that fails is skipped (the import itself always succeeds).
    """

    def __init__(
        self,
        callbacks: dict[str, Callable[[ModuleType], None]],
        on_error: Callable[[Exception], None],
    ) -> None:
        self._pending = dict(callbacks)
        self._on_error = on_error
        self._finding: set[str] = set()

    def install(self) -> None:
        for name in list(self._pending):
            module = sys.modules.get(name)
            if module is not None:
                self._fire(name, module)
        if self._pending:
            sys.meta_path.insert(0, self)

    def uninstall(self) -> None:
        self._pending.clear()
        if self in sys.meta_path:
            sys.meta_path.remove(self)

    def find_spec(
        self, fullname: str, path: Any, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in self._pending or fullname in self._finding:
            return None
        self._finding.add(fullname)
        try:
            spec = _find_with_others(self, fullname, path, target)
        finally:
            self._finding.discard(fullname)
        loader = None if spec is None else spec.loader
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return None
        original = loader.exec_module
        hook = self

        def exec_module(module: ModuleType) -> None:
            original(module)
            hook._fire(fullname, module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec

    def _fire(self, name: str, module: ModuleType) -> None:
        callback = self._pending.pop(name, None)
        if not self._pending and self in sys.meta_path:
            sys.meta_path.remove(self)
        if callback is not None:
            try:
                callback(module)
            except Exception as exc:  # an unknown version of the library: not instrumented
                self._on_error(exc)


def _find_with_others(
    skip: object, fullname: str, path: Any, target: ModuleType | None
) -> ModuleSpec | None:
    for finder in list(sys.meta_path):
        if finder is skip:
            continue
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        spec = find(fullname, path, target)
        if spec is not None:
            return spec  # type: ignore[no-any-return]
    return None
