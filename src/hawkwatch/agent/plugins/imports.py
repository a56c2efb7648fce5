"""Import timing: each import whose cumulative time reaches ``imports.threshold_ms``.

The same measurement ``python -X importtime`` makes, without its stderr output: CPython calls
``importlib._bootstrap._find_and_load`` (looked up on the module each time) for every module not
yet in ``sys.modules``, so wrapping that function times exactly the real loads. Self time is
cumulative time minus the imports nested inside, tracked per thread. Started from
``hawkwatch run``'s bootstrap it sees the whole launch; started later, the imports after it.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

from hawkwatch.agent.monitor import AgentContext, DeferredFailure
from hawkwatch.model.plain_records import IMPORT_TIME

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, ClassVar

AGENT_THREAD_PREFIX = "hawkwatch-"  # the agent's threads: scheduler, stall watchdog, profiler
_bootstrap: Any = sys.modules.get("_frozen_importlib") or sys.modules["importlib._bootstrap"]


class ImportTimeMonitor:
    name: ClassVar[str] = "imports"

    def __init__(self) -> None:
        self._ctx: AgentContext | None = None
        self._original: Callable[..., Any] | None = None
        self._wrapper: Callable[..., Any] | None = None
        self._failure = DeferredFailure()

    def start(self, ctx: AgentContext) -> None:
        self._ctx = ctx
        threshold_ns = int(ctx.config.imports.threshold_ms * 1_000_000)
        original = _bootstrap._find_and_load
        frames: dict[int, list[list[Any]]] = {}  # thread id -> stack of [name, nested ns]
        get_ident, clock = threading.get_ident, time.perf_counter_ns
        store, failure = self._store, self._failure

        def timed_find_and_load(name: str, import_: Any) -> Any:
            ident = get_ident()
            stack = frames.get(ident)
            if stack is None:
                stack = frames[ident] = []
            frame: list[Any] = [name, 0]
            stack.append(frame)
            started = clock()
            try:
                return original(name, import_)
            finally:
                elapsed = clock() - started
                stack.pop()
                if stack:
                    stack[-1][1] += elapsed
                else:
                    del frames[ident]
                if elapsed >= threshold_ns and not _inside_own(stack):
                    try:
                        parent = stack[-1][0] if stack else None
                        store(name, elapsed, elapsed - frame[1], parent)
                    except Exception as exc:  # never into the importing code
                        failure.capture(exc)

        self._original, self._wrapper = original, timed_find_and_load
        _bootstrap._find_and_load = timed_find_and_load
        ctx.every(1.0, failure.raise_if_failed, self)

    def _store(self, name: str, cumulative_ns: int, self_ns: int, parent: str | None) -> None:
        ctx = self._ctx
        if ctx is None or _is_own(name):
            return
        record = IMPORT_TIME(  # importing the typed model here would re-enter this hook
            time=round(time.time() - cumulative_ns / 1e9, 6),
            self_us=self_ns // 1000,
            cumulative_us=cumulative_ns // 1000,
            parent=parent,
            thread=threading.current_thread().name,
            module=name,
        )
        ctx.write_nowait(record)

    def stop(self) -> None:
        self._restore()
        self._ctx = None

    def after_fork_child(self) -> None:
        self._restore()
        self._ctx = None

    def _restore(self) -> None:
        if self._wrapper is not None and _bootstrap._find_and_load is self._wrapper:
            _bootstrap._find_and_load = self._original
        self._wrapper = None


def _inside_own(stack: list[list[Any]]) -> bool:
    """Imported while one of hawkwatch's own modules was importing: the typed model and its
    msgspec, loaded by a monitor at its first record (on any thread), are the agent's cost."""
    return any(name == "hawkwatch" or name.startswith("hawkwatch.") for name, _ in stack)


def _is_own(name: str) -> bool:
    """hawkwatch's own imports: its modules, and whatever its threads import (psutil...).

    They are the agent's cost, not the program's, and must not show in "Slowest imports".
    """
    if name == "hawkwatch" or name.startswith("hawkwatch."):
        return True
    return threading.current_thread().name.startswith(AGENT_THREAD_PREFIX)
