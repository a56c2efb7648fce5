"""Network monitor: every HTTP request's phases, sizes and errors (``network-transaction``).

Four client families are timed (``net_stdlib``: http.client, urllib, urllib3, requests;
``net_httpx``; ``net_aiohttp``); libraries imported after the agent started are instrumented as
their import completes (``once_imported``, on the agent's ``AfterImport``): ``socket`` too, so a
program that never touches the network does not pay for importing it, and the httpx and aiohttp
instrumentations are only loaded with their library. Each ended request
becomes one typed record, redacted (``hawkwatch.model.urls``). The request's thread only queues
the ended timeline (a deque append); the scheduler thread turns them into records every
``DRAIN_INTERVAL_S`` and at stop, many per store operation, while the app's threads wait on the
network. A process killed hard (SIGKILL) loses at most that interval's requests. The wrappers
never raise into the app: a failure is kept and raised on the scheduler thread, where the
runtime's firewall switches the monitor off. At stop and in a forked child the wrappers are
removed where they are still the outermost, and made inert otherwise (another tool wrapped
them after us: its wrapper keeps working).
"""

from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Callable
from types import ModuleType

from hawkwatch.agent.import_hooks import AfterImport
from hawkwatch.agent.monitor import AgentContext, DeferredFailure
from hawkwatch.agent.plugins.net_patch import Instrumentation
from hawkwatch.agent.plugins.net_sampling import AGGREGATE_INTERVAL_S, Aggregates, Sampler
from hawkwatch.agent.plugins.net_stdlib import StdlibInstrumentation
from hawkwatch.agent.plugins.net_timeline import Timeline
from hawkwatch.agent.plugins.net_untraced import Tally, Untraced
from hawkwatch.model.network_rules import BLOCKING_LIBRARIES, SLOW_REQUEST_MS

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, ClassVar, Final

    from hawkwatch.model.records import NetworkTransaction

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
        self._ended: deque[Timeline | Untraced] = deque()
        self._tally = Tally()
        """Untraced requests that ended well, counted by the hooks (aiohttp's) per aggregate."""
        self._sampler = Sampler()
        self._aggregates = Aggregates(time.time())
        self._slow_ns = int(SLOW_REQUEST_MS * 1e6)
        capture = self._failure.capture
        self._stdlib = StdlibInstrumentation(
            self._finish, running_loop, capture, self._sampler.traced
        )
        self._late: list[Instrumentation] = []  # httpx's and aiohttp's, made at their import
        self._hook: AfterImport | None = None

    def start(self, ctx: AgentContext) -> None:
        self._ctx = ctx
        config = ctx.config.network
        self._keep_params = frozenset(
            name.strip() for name in config.keep_query_params.split(",") if name.strip()
        )
        sampler = self._sampler
        sampler.warmup, sampler.every = config.sample_warmup, config.sample_every
        sampler.per_second = config.max_traced_per_s
        sampler.reset()
        self._aggregates.clear(time.time())
        self._hook = once_imported(
            {
                "socket": self._stdlib.install_socket,  # first: ssl and http.client import it
                "ssl": self._stdlib.install_tls,
                "http.client": self._stdlib.install_http_client,
                "urllib3.connection": self._instrument_urllib3,
                "httpx": self._instrument_httpx,
                "aiohttp": self._instrument_aiohttp,
            },
            self._failure.capture,
        )
        ctx.every(1.0, self._failure.raise_if_failed, self)
        ctx.every(DRAIN_INTERVAL_S, self.drain, self)
        ctx.every(AGGREGATE_INTERVAL_S, self.write_aggregates, self)

    def _instrument_httpx(self, module: ModuleType) -> None:
        from hawkwatch.agent.plugins.net_httpx import HttpxInstrumentation

        self._install_late(HttpxInstrumentation, module)

    def _instrument_aiohttp(self, module: ModuleType) -> None:
        from hawkwatch.agent.plugins.net_aiohttp import AiohttpInstrumentation

        self._install_late(AiohttpInstrumentation, module)

    def _install_late(self, family: Callable[..., Any], module: ModuleType) -> None:
        """A family's instrumentation, made when it is imported: with the sampler's shortcut
        (``skips``) and the tally its hooks count untraced requests in."""
        instrumentation = family(
            self._finish,
            running_loop,
            self._failure.capture,
            self._sampler.traced,
            skips=self._sampler.skips,
            tally=self._tally,
        )
        self._late.append(instrumentation)
        instrumentation.install(module)

    def _instrument_urllib3(self, module: ModuleType) -> None:
        for name in ("HTTPConnection", "HTTPSConnection"):
            self._stdlib.instrument_connection_class(getattr(module, name))

    def _finish(self, timeline: Timeline | Untraced) -> None:
        """An ended request, from the thread that made it. An untraced one that gets no record
        (it ended well, fast, and not as a blocking client on a loop's thread) is counted in
        the tally at once (two appends) and freed: kept in the queue until the next drain,
        every such object would survive into the collector's older generations, and their
        passes over the whole heap cost the app more than the fold did."""
        if self._ctx is None:
            return
        if type(timeline) is Untraced and timeline.error is None:
            end = timeline.response_end
            total = 0 if end is None else end - timeline.fetch_start
            if total < self._slow_ns and not (
                timeline.on_loop_thread and timeline.library_name() in BLOCKING_LIBRARIES
            ):
                key = (timeline.key, timeline.method, timeline.status, timeline.library,
                       timeline.client)  # ``Aggregates.fold``'s  # fmt: skip
                self._tally.count(
                    key, timeline.url_object or timeline.url, total, timeline.response_bytes
                )
                return
        self._ended.append(timeline)

    def drain(self) -> None:
        """Write the requests that ended since the last call (scheduler thread, and at stop).

        Many records per buffer operation (``RecordStore.write_many``: one encoding buffer, one
        commit per 32 KiB, crash-safe as a whole). In one go: handing the GIL over every few
        records (``sleep(0)``) measured worse, each hand-over a round of wake-ups costing more
        kernel CPU than the wait it saves.
        """
        ctx, keep, ended = self._ctx, self._keep_params, self._ended
        if ctx is None:
            return
        aggregates = self._aggregates
        for key, totals, sizes, url in self._tally.take():
            aggregates.fold_tally(key, totals, sizes, url, keep)
        if not ended:
            return
        wall_offset = time.time() - time.perf_counter_ns() / 1e9  # monotonic stamps to Unix s
        popleft = ended.popleft
        records: list[NetworkTransaction] = []
        for _ in range(len(ended)):  # (an untraced one here gets a record: ``_finish``)
            record = popleft().to_record(keep, wall_offset)
            records.append(record)
            aggregates.add(record)
        if records:
            ctx.records.write_many(records)

    def write_aggregates(self) -> None:
        """The window's ``network-aggregate`` records (scheduler thread, and at stop)."""
        ctx = self._ctx
        if ctx is not None:
            self.drain()
            records = self._aggregates.take(time.time())
            if records:
                ctx.records.write_many(records)

    def stop(self) -> None:
        try:
            self.write_aggregates()
        finally:
            self._remove()

    def after_fork_child(self) -> None:
        self._ended.clear()  # the parent's requests: the parent writes them
        self._tally.close()
        self._aggregates.clear(time.time())
        self._sampler.reset()
        self._remove()

    def _remove(self) -> None:
        self._ctx = None
        self._tally.close()  # a hook left in another tool's chain keeps nothing
        if self._hook is not None:
            self._hook.callbacks.clear()  # a loader already wrapped then instruments nothing
            self._hook.uninstall()
            self._hook = None
        for instrumentation in (*reversed(self._late), self._stdlib):
            instrumentation.uninstall()
        self._late.clear()


def once_imported(
    callbacks: dict[str, Callable[[ModuleType], None]], on_error: Callable[[Exception], None]
) -> AfterImport | None:
    """Call ``callbacks[name](module)`` once, when ``name`` is imported or now if it already is.

    On the agent's ``AfterImport`` finder, each callback taken off once it ran (a module
    imported again, after a test dropped it from ``sys.modules``, is not instrumented twice);
    the finder leaves ``sys.meta_path`` when none is left. A callback that fails is reported to
    ``on_error`` (an unknown version of the library: not instrumented); the import succeeds.
    Returns the finder installed, or None when every module was already imported.
    """
    hook = AfterImport({}, on_error)

    def fire(name: str, callback: Callable[[ModuleType], None]) -> Callable[[], None]:
        def run() -> None:
            if hook.callbacks.pop(name, None) is None:
                return  # ran already
            if not hook.callbacks:
                hook.uninstall()
            callback(sys.modules[name])

        return run

    for name, callback in callbacks.items():
        module = sys.modules.get(name)
        if module is None:
            hook.callbacks[name] = fire(name, callback)
            continue
        try:
            callback(module)
        except Exception as exc:
            on_error(exc)
    if not hook.callbacks:
        return None
    hook.install()
    return hook
