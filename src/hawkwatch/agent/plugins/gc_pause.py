"""Garbage-collection pauses: every collection longer than ``gc.threshold_ms`` (10 ms).

A collection stops the thread that triggered it (and, through the GIL, every other Python
thread), so long full collections are a classic source of Python jank. The ``gc.callbacks`` hook
costs two clock reads per collection; anything more happens only for a pause over the threshold,
and the record is written without ever blocking (the collection may run inside our own store).
Nothing may escape the collector, so a failure in the hook is kept and raised by a periodic
check on the scheduler thread, where the runtime's firewall disables the monitor.
"""

from __future__ import annotations

import gc
import threading
import time

from hawkwatch.agent.monitor import AgentContext, DeferredFailure
from hawkwatch.model.plain_records import GC_PAUSE

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, ClassVar


class GcPauseMonitor:
    name: ClassVar[str] = "gc"

    def __init__(self) -> None:
        self._ctx: AgentContext | None = None
        self._threshold_ns = 0
        self._started_ns = 0
        self._failure = DeferredFailure()

    def start(self, ctx: AgentContext) -> None:
        self._ctx = ctx
        self._threshold_ns = int(ctx.config.gc.threshold_ms * 1_000_000)
        gc.callbacks.append(self._on_gc)
        ctx.every(1.0, self._failure.raise_if_failed, self)

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started_ns = time.perf_counter_ns()
            return
        elapsed = time.perf_counter_ns() - self._started_ns
        if elapsed < self._threshold_ns or self._ctx is None or not self._started_ns:
            return
        try:
            started = round(time.time() - elapsed / 1e9, 6)  # as the key says it
            pause = GC_PAUSE(  # no import inside the collector: the typed bytes, plain
                start=started,
                generation=info["generation"],
                duration_ms=round(elapsed / 1e6, 3),
                collected=info.get("collected"),
                uncollectable=info.get("uncollectable"),
                thread=threading.current_thread().name,
            )
            self._ctx.write_nowait(pause)
        except Exception as exc:  # inside the collector nothing may escape; report it later
            self._failure.capture(exc)
            self._ctx = None

    def stop(self) -> None:
        self._remove_hook()
        self._ctx = None

    def after_fork_child(self) -> None:
        self._remove_hook()
        self._ctx = None

    def _remove_hook(self) -> None:
        while self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
