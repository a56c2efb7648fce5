"""Reference cycles: what the cyclic garbage collector frees again and again, and what it cannot.

Objects in a reference cycle are freed only by the collector; code that makes such cycles on
every request keeps it busy (Matrix's retain-cycle report, in Python terms: here the cycles do
get freed, but at a cost). A ``gc.callbacks`` hook counts every collection, the objects it freed
and its time (two clock reads). At most once per ``sample_interval_s`` a young-generation
collection is *sampled*: ``gc.DEBUG_SAVEALL`` is set for that one collection, so what it would
free lands in ``gc.garbage``; the stop callback counts it by type and takes it out again, and the
next collection of generation 1 frees it (finalizers ran as usual). Only generation-0
collections are sampled: what they free waits for the next generation-1 collection, not for a
full one. An app that sets ``DEBUG_SAVEALL`` itself is never sampled (its ``gc.garbage`` is its
own). Uncollectable objects are what sits in ``gc.garbage`` otherwise, counted by type.
"""

from __future__ import annotations

import gc
import time
from collections import Counter
from collections.abc import Callable

from hawkwatch.agent.plugins.memory_objects import type_name

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (loaded just after start)
if TYPE_CHECKING:
    from typing import Any

    from hawkwatch.model.records.memory import GcCycles

MAX_TYPES = 12
MAX_GARBAGE_SCAN = 10_000


class CycleCounter:
    """The ``gc.callbacks`` hook and its running totals; ``window`` turns them into a record."""

    def __init__(
        self,
        sample_interval_s: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        timer: Callable[[], int] = time.perf_counter_ns,
    ) -> None:
        self.sample_interval_s = sample_interval_s
        self._clock = clock
        self._timer = timer
        self._started_ns = 0
        self._next_sample = 0.0
        self._sampling = False
        self._saved_flags = 0
        self._mark = 0
        self._window_start = clock()
        self.failure: Exception | None = None
        self._reset()

    def _reset(self) -> None:
        self.collections = 0
        self.with_garbage = 0
        self.collected = 0
        self.gc_ns = 0
        self.sampled = 0
        self.sampled_collected = 0
        self.objects: Counter[str] = Counter()
        self.samples: Counter[str] = Counter()

    def install(self) -> None:
        if self._on_gc not in gc.callbacks:
            gc.callbacks.append(self._on_gc)

    def remove(self) -> None:
        while self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        if self._sampling:  # removed between start and stop (another thread cannot: GIL)
            gc.set_debug(self._saved_flags)
            self._sampling = False

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        try:
            if phase == "start":
                self._started_ns = self._timer()
                if info.get("generation") == 0 and self._clock() >= self._next_sample:
                    self._begin_sample()
                return
            self._count(info)
        except Exception as exc:  # nothing may escape the collector: raised later, elsewhere
            if self.failure is None:
                self.failure = exc
            self.remove()

    def _begin_sample(self) -> None:
        flags = gc.get_debug()
        if flags & gc.DEBUG_SAVEALL:
            return  # the app keeps its garbage itself: not ours to take out
        self._saved_flags = flags
        self._mark = len(gc.garbage)
        gc.set_debug(flags | gc.DEBUG_SAVEALL)
        self._sampling = True

    def _count(self, info: dict[str, Any]) -> None:
        elapsed = self._timer() - self._started_ns if self._started_ns else 0
        self._started_ns = 0
        collected = int(info.get("collected") or 0)
        self.collections += 1
        self.gc_ns += elapsed
        self.collected += collected
        if collected:
            self.with_garbage += 1
        if not self._sampling:
            return
        gc.set_debug(self._saved_flags)
        self._sampling = False
        self._next_sample = self._clock() + self.sample_interval_s
        garbage = gc.garbage
        saved = garbage[self._mark :]
        del garbage[self._mark :]
        kinds = Counter(type_name(type(item)) for item in saved)
        del saved
        self.sampled += 1
        self.sampled_collected += sum(kinds.values())
        self.objects.update(kinds)
        self.samples.update(kinds.keys())

    def has_news(self) -> bool:
        """Whether ``window`` would say anything: the collector ran, or garbage is stuck
        (checked first, so a process that ends quietly never loads the typed model)."""
        return bool(self.collections) or any(
            not (gc.get_debug() & gc.DEBUG_SAVEALL) for _ in gc.garbage[:1]
        )

    def window(self, wall: float) -> GcCycles:
        """The totals since the last window as a record; they start again from zero."""
        from hawkwatch.model.records.memory import CycleType, GcCycles

        now = self._clock()
        uncollectable = Counter(type_name(type(item)) for item in gc.garbage[:MAX_GARBAGE_SCAN])
        if gc.get_debug() & gc.DEBUG_SAVEALL:
            uncollectable.clear()  # the app saves all its garbage there: not uncollectable
        record = GcCycles(
            time=wall,
            window_s=round(now - self._window_start, 3),
            collections=self.collections,
            with_garbage=self.with_garbage,
            collected=self.collected,
            gc_s=round(self.gc_ns / 1e9, 6),
            sampled=self.sampled,
            sampled_collected=self.sampled_collected,
            types=tuple(
                CycleType(name, count, self.samples[name])
                for name, count in self.objects.most_common(MAX_TYPES)
            ),
            uncollectable=tuple(
                CycleType(name, count, 0) for name, count in uncollectable.most_common(MAX_TYPES)
            ),
            uncollectable_total=sum(uncollectable.values()),
        )
        self._window_start = now
        self._reset()
        return record
