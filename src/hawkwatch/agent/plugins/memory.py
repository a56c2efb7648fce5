"""Memory: growth always on and cheap; allocation tracing and living objects on demand.

Every ``memory.interval_s`` the resident size is read (``/proc/self/statm`` through psutil) and
the robust slope of the last ``memory.window_s`` decides whether the footprint grows steadily
(``analysis.memory_growth``): a ``memory-growth`` record. With ``memory.trace=auto`` that
finding starts tracemalloc; snapshots every ``snapshot_interval_s`` become ``memory-snapshot``
records and, once ``min_snapshots`` exist, ``memory-leak`` suspects (stacks whose live bytes grew
in most consecutive snapshots). While tracing, live objects are counted by type and the growing
ones get a referrer path (``memory-types``). Tracing stops after ``trace_quiet_s`` without growth.
Its cost (CPU spent on snapshots, tracemalloc's own memory) is in ``memory-trace`` records.
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque
from collections.abc import Callable
from types import FrameType

from hawkwatch.analysis.memory_growth import (
    GrowthRule,
    SteadyGrowth,
    footprint_growth,
    steady_growth,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, ClassVar

    from hawkwatch.agent.monitor import AgentContext
    from hawkwatch.agent.plugins.memory_cycles import CycleCounter
    from hawkwatch.agent.plugins.memory_memray import MemrayRecorder
    from hawkwatch.agent.plugins.memory_trace import AllocationTracer
    from hawkwatch.model.allocations import LiveAllocations
    from hawkwatch.model.records.memory import LeakSuspect, MemFrame, MemorySnapshot

MB = 1024 * 1024
TRACE_MODES = ("auto", "always", "never")
BACKENDS = ("tracemalloc", "memray")
MEMRAY_POINTS = 12
MAX_SUSPECTS = 10
MAX_TYPES = 5
MAX_STACKS_JSON = 14_000
REWRITE_EVERY = 12
CENSUS_BUDGET_S = 0.25


class MemoryMonitor:
    name: ClassVar[str] = "memory"

    def __init__(self) -> None:
        self._ctx: AgentContext | None = None
        self._resident: Callable[[], int] = resident_reader_unset
        self._points: deque[tuple[float, float]] = deque()
        self._rule = GrowthRule()
        self._mode = "auto"
        self._tracer: AllocationTracer | None = None
        self._memray: MemrayRecorder | None = None
        self._cycles: CycleCounter | None = None
        self._next_snapshot = 0.0
        self._last_growth = 0.0
        self._growing = False
        self._cost_s = 0.0
        self._censuses: deque[dict[str, int]] = deque(maxlen=8)
        self._baselines: dict[str, frozenset[int]] = {}
        self._paths: dict[str, list[str]] = {}
        self._planted: dict[str, list[Any]] = {}  # census: weak references to new instances
        self._batch_keys: list[int] = []
        self._batches_skipped = 0
        self._unwritten: list[LeakSuspect] = []

    def start(self, ctx: AgentContext) -> None:
        config = ctx.config.memory
        if config.trace not in TRACE_MODES:
            raise ValueError(f"memory.trace = {config.trace!r}: use auto, always or never")
        if config.backend not in BACKENDS:
            raise ValueError(f"memory.backend = {config.backend!r}: use tracemalloc or memray")
        self._ctx = ctx
        self._mode = config.trace
        self._rule = GrowthRule(
            config.window_s, config.growth_min_mb * MB, config.growth_min_percent
        )
        self._resident = resident_reader()
        if config.backend == "memray" and self._mode != "never":
            if _main_running():
                self._start_memray()
            else:  # under ``hawkwatch run``: once the bootstrap's profile hook is gone
                ctx.on("main-started", self._start_memray_soon)
        elif self._mode == "always":
            self._start_tracing("always")
        self.tick()
        ctx.every(config.interval_s, self.tick, self)
        if config.cycles:
            ctx.defer(self._start_cycles, self)  # not at start: nothing needs it at once

    def _start_cycles(self) -> None:
        ctx = self._ctx
        if ctx is None or self._cycles is not None:
            return
        from hawkwatch.agent.plugins.memory_cycles import CycleCounter

        self._cycles = CycleCounter(ctx.config.memory.cycles_sample_s)
        self._cycles.install()
        ctx.every(ctx.config.memory.cycles_interval_s, self._write_cycles, self)

    def _write_cycles(self, at_exit: bool = False) -> None:
        """One ``memory-cycles`` window, when the collector ran or garbage is stuck."""
        counter, ctx = self._cycles, self._ctx
        if counter is None or ctx is None:
            return
        if counter.failure is not None:  # caught inside the collector: the firewall decides
            raise counter.failure
        if not counter.has_news():
            return
        record = counter.window(ctx.wall_clock())
        if record.collections or record.uncollectable_total:
            if at_exit:
                _write_at_exit(ctx, record)
            else:
                ctx.write(record)

    def tick(self) -> None:
        """One footprint reading; growth decision; a snapshot when tracing and due."""
        ctx = self._ctx
        if ctx is None:
            return
        now = time.monotonic()
        self._points.append((now, float(self._resident())))
        while self._points and self._points[0][0] < now - self._rule.window_s * 1.5:
            self._points.popleft()
        finding = footprint_growth(list(self._points), self._rule)
        if finding is not None:
            self._last_growth = now
            if not self._growing:
                self._write_growth(ctx, finding)
            if self._tracer is None and self._memray is None and self._mode == "auto":
                self._start_tracing("growth")
        self._growing = finding is not None
        config = ctx.config.memory
        if self._memray is not None:
            # No object census under memray: memray records the census's every allocation,
            # which made one census hold the GIL for seconds in the three-leak example.
            return
        if self._tracer is None:
            return
        import tracemalloc  # only once tracing: not at every start

        if not tracemalloc.is_tracing():  # the app stopped tracemalloc: its call, not ours
            self._stop_tracing("stopped-by-app")
        elif (
            self._mode == "auto"
            and now - self._last_growth > config.trace_quiet_s
            and self._tracer.taken >= config.min_snapshots
        ):
            self._stop_tracing("quiet")
        elif now >= self._next_snapshot:
            self._next_snapshot = now + config.snapshot_interval_s
            self._take_snapshot(ctx)

    def _write_growth(self, ctx: AgentContext, finding: Any) -> None:
        from hawkwatch.model.records.memory import MemoryGrowth

        ctx.write(
            MemoryGrowth(
                time=ctx.wall_clock(),
                window_s=round(finding.end_time - finding.start_time, 3),
                start_bytes=round(finding.start_bytes),
                end_bytes=round(finding.end_bytes),
                growth_bytes=round(finding.growth_bytes),
                growth_percent=round(finding.growth_percent, 2),
                slope_bytes_per_s=round(finding.slope_bytes_per_s, 1),
                samples=finding.samples,
            )
        )

    def _start_tracing(self, reason: str) -> None:
        if self._ctx is None:
            return
        # Imported here: the tracer and the allocation model behind it cost ~12 ms to import,
        # paid only by a process that grows (or asks for tracing), not by every start.
        from hawkwatch.agent.plugins.memory_trace import AllocationTracer
        from hawkwatch.model.records.memory import MemoryTrace

        config = self._ctx.config.memory
        tracer = AllocationTracer(config.trace_frames)
        tracer.start()
        self._tracer = tracer
        self._censuses.clear()
        self._baselines.clear()
        self._paths.clear()
        self._planted = {}
        self._batch_keys, self._batches_skipped, self._unwritten = [], 0, []
        self._cost_s = 0.0
        self._next_snapshot = time.monotonic() + config.snapshot_interval_s
        self._ctx.write(
            MemoryTrace(
                time=self._ctx.wall_clock(),
                state="started",
                reason=reason if tracer.owned else "app-tracing",
                nframes=config.trace_frames,
                owned=tracer.owned,
            )
        )

    def _start_memray_soon(self) -> None:
        """From the scheduler thread: memray must not start inside a profile callback (the
        callback's frames would stay on its stack, freed), and it hooks every thread anyway."""
        if self._ctx is not None:
            self._ctx.defer(self._start_memray, self)

    def _start_memray(self) -> None:
        """memray from now to exit; where it cannot run, tracemalloc in its place (and why)."""
        ctx = self._ctx
        if ctx is None:
            return
        from hawkwatch.agent.plugins.memory_memray import MemrayRecorder, MemrayUnavailable
        from hawkwatch.model.records.memory import MemoryTrace

        recorder = MemrayRecorder(ctx.session.path)
        try:
            recorder.start()
        except MemrayUnavailable as exc:
            ctx.write(
                MemoryTrace(
                    time=ctx.wall_clock(),
                    state="failed",
                    reason=f"memray-unavailable: {exc}",
                    backend="memray",
                )
            )
            self._start_tracing("always")
            return
        self._memray = recorder
        self._censuses.clear()
        self._cost_s = 0.0
        self._next_snapshot = time.monotonic() + ctx.config.memory.snapshot_interval_s
        ctx.write(
            MemoryTrace(
                time=ctx.wall_clock(),
                state="started",
                reason="always",
                backend="memray",
                capture=recorder.path.name,
                native=recorder.native,
            )
        )

    def _stop_memray(self, reason: str) -> None:
        """End memray's recording, read its capture: snapshots, suspects, cost."""
        recorder, self._memray = self._memray, None
        ctx = self._ctx
        if recorder is None or ctx is None:
            return
        from hawkwatch.model.records.memory import LeakSuspect, MemoryTrace

        recorder.stop()
        started = time.thread_time()
        config = ctx.config.memory
        result = recorder.read(MEMRAY_POINTS)
        wall = ctx.wall_clock()
        for live in result.snapshots:
            _write_at_exit(ctx, _snapshot_record(live, live.time_s or wall))
        last = result.snapshots[-1] if result.snapshots else None
        counts = {g.stack_id: g.count for g in last.groups} if last else {}
        span = (last.time_s or 0) - (result.snapshots[0].time_s or 0) if last else 0.0
        if len(result.snapshots) >= config.min_snapshots and last is not None:
            for rank, suspect in enumerate(result.suspects[:MAX_SUSPECTS]):
                _write_at_exit(
                    ctx,
                    LeakSuspect(
                        time=wall,
                        rank=rank,
                        frames=_model_frames(last, suspect.key),
                        growth_bytes=suspect.growth,
                        live_bytes=suspect.last,
                        count=counts.get(suspect.key, 0),
                        grown=suspect.grown,
                        steps=suspect.steps,
                        rate_bytes_per_s=round(suspect.growth / span, 1) if span > 0 else 0.0,
                    ),
                )
        self._cost_s += time.thread_time() - started
        _write_at_exit(
            ctx,
            MemoryTrace(
                time=ctx.wall_clock(),
                state="stopped",
                reason=reason,
                snapshots=len(result.snapshots),
                cost_s=round(self._cost_s, 6),
                backend="memray",
                capture=recorder.path.name,
                capture_bytes=result.capture_bytes,
                native=result.native,
            ),
        )

    def _stop_tracing(self, reason: str) -> None:
        tracer, self._tracer = self._tracer, None
        if tracer is None:
            return
        from hawkwatch.model.records.memory import MemoryTrace

        overhead, owned = tracer.peak_overhead, tracer.owned
        tracer.stop()
        if self._ctx is not None:
            for suspect_record in self._unwritten:  # the newest numbers of unchanged suspects
                self._ctx.write(suspect_record)
            self._unwritten = []
            self._ctx.write(
                MemoryTrace(
                    time=self._ctx.wall_clock(),
                    state="stopped",
                    reason=reason,
                    snapshots=tracer.taken,
                    cost_s=round(self._cost_s, 6),
                    tracemalloc_bytes=overhead,
                    nframes=tracer.nframes,
                    owned=owned,
                )
            )

    def _take_snapshot(self, ctx: AgentContext) -> None:
        tracer = self._tracer
        if tracer is None:
            return
        import msgspec

        from hawkwatch.model.records.memory import LeakSuspect, MemorySnapshot, StackBytes

        started = time.thread_time()
        wall = ctx.wall_clock()
        live = tracer.snapshot(wall)
        stacks = [
            StackBytes(_frames(tracer, g.stack_id), g.bytes, g.count)
            for g in tracer.top_stacks(live)
        ]
        while len(msgspec.json.encode(stacks)) > MAX_STACKS_JSON and len(stacks) > 1:
            stacks.pop()  # the smallest go first: a record stays under MTHawkeye's 16 KB
        ctx.write(
            MemorySnapshot(
                time=wall,
                index=tracer.taken,
                total_bytes=live.total_bytes,
                count=live.total_count,
                stack_count=len(live.groups),
                stacks=tuple(stacks),
            )
        )
        config = ctx.config.memory
        suspects = tracer.suspects(config.min_snapshots)[:MAX_SUSPECTS]
        span = (live.time_s or 0) - (tracer.snapshots[0].time_s or 0)
        last = {g.stack_id: g for g in live.groups}
        batch = [
            LeakSuspect(
                time=wall,
                rank=rank,
                frames=_frames(tracer, suspect.key),
                growth_bytes=suspect.growth,
                live_bytes=suspect.last,
                count=last[suspect.key].count if suspect.key in last else 0,
                grown=suspect.grown,
                steps=suspect.steps,
                rate_bytes_per_s=round(suspect.growth / span, 1) if span > 0 else 0.0,
            )
            for rank, suspect in enumerate(suspects)
        ]
        keys = [suspect.key for suspect in suspects]
        self._batches_skipped += 1
        if keys != self._batch_keys or self._batches_skipped >= REWRITE_EVERY:
            # The same suspects in the same order are rewritten only now and then (and at stop),
            # so hours of tracing do not fill the store with repeats.
            for suspect_record in batch:
                ctx.write(suspect_record)
            self._batch_keys, self._batches_skipped, self._unwritten = keys, 0, []
        else:
            self._unwritten = batch
        if config.objects:
            from hawkwatch.agent.plugins.memory_objects import gil_held  # while tracing only

            with gil_held():  # see gil_held: the census holds references to every object
                self._census(ctx, wall)
        self._cost_s += time.thread_time() - started

    def _census(self, ctx: AgentContext, wall: float) -> None:
        from hawkwatch.agent.plugins.memory_objects import census, referrer_path
        from hawkwatch.model.records.memory import GrowingType

        config = ctx.config.memory
        candidates = _growing(self._censuses)
        want = {g.key: self._baselines.get(g.key) for g in candidates}
        found = census(CENSUS_BUDGET_S, want, planted=self._planted)
        if not found.complete:
            return
        self._planted = found.planted
        chosen = found.chosen
        self._baselines.update(found.baselines)
        self._censuses.append(found.counts)
        if len(self._censuses) < config.min_snapshots:
            return
        for item in _growing(self._censuses):
            instance = chosen.pop(item.key, None)
            path = self._paths.get(item.key, [])
            note = "no instance picked yet (none has outlived a census interval yet)"
            if instance is not None and not path:  # a found path is kept: one search per type
                path, note = referrer_path(
                    instance,
                    max_objects=config.referrer_max_objects,
                    budget_s=config.referrer_budget_ms / 1000,
                )
                if path:
                    self._paths[item.key] = path
            del instance
            ctx.write(
                GrowingType(
                    time=wall,
                    type=item.key,
                    count=item.last,
                    count_growth=item.growth,
                    referrer_path=tuple(path),
                    path_note=note,
                )
            )
        chosen.clear()

    def stop(self) -> None:
        if self._cycles is not None:  # first: reading memray's capture makes much garbage
            self._cycles.remove()
            self._write_cycles(at_exit=True)
            self._cycles = None
        self._stop_tracing("stop")
        self._stop_memray("stop")
        self._ctx = None

    def after_fork_child(self) -> None:
        tracer, self._tracer = self._tracer, None
        if tracer is not None:
            tracer.stop()
        recorder, self._memray = self._memray, None
        if recorder is not None:
            recorder.abandon()
        cycles, self._cycles = self._cycles, None
        if cycles is not None:
            cycles.remove()
        self._ctx = None


def _frames(tracer: AllocationTracer, stack_id: int) -> tuple[MemFrame, ...]:
    from hawkwatch.model.records.memory import MemFrame

    return tuple(MemFrame(f.func, f.file, f.line) for f in tracer.frames(stack_id))


def _write_at_exit(ctx: AgentContext, record: Any) -> None:
    """Write with the store's buffer flushed first, on this thread: a record that fills the
    buffer past its threshold asks the store's thread to flush, and at exit that thread may
    not exist yet and cannot be started any more (CPython 3.12+ refuses new threads then)."""
    ctx.records.flush()
    ctx.write(record)


def _main_running() -> bool:
    """Whether ``__main__``'s module code is on this thread's stack (``hawkwatch.start()`` from
    the app), rather than the interpreter still starting (``hawkwatch run``'s sitecustomize).

    memray follows Python stacks with a profile hook; the one ``hawkwatch run`` sets until the
    main module starts would replace it, so there memray starts only once that hook is gone.
    """
    frame: FrameType | None = sys._getframe()
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == "__main__":
            return True
        frame = frame.f_back
    return False


def _model_frames(live: LiveAllocations, stack_id: int) -> tuple[MemFrame, ...]:
    """A stack of the shared model as record frames (native ones flagged), innermost first."""
    from hawkwatch.model.records.memory import MemFrame
    from hawkwatch.model.stack import PyFrame

    out = []
    for frame in live.stacks.stack(stack_id):
        if isinstance(frame, PyFrame):
            out.append(MemFrame(frame.func, frame.file, frame.line))
        else:
            out.append(MemFrame(frame.symbol or frame.label, frame.file, frame.line, native=True))
    return tuple(out)


def _snapshot_record(live: LiveAllocations, wall: float) -> MemorySnapshot:
    """One moment of a memray capture: totals and the stacks Matrix's emit rules list."""
    import msgspec

    from hawkwatch.analysis.allocations import build_allocation_report
    from hawkwatch.model.allocation_report import ReportRules
    from hawkwatch.model.records.memory import MemorySnapshot, StackBytes

    report = build_allocation_report(live, ReportRules())
    listed = report.categories[0].stacks if report.categories else ()
    stacks = [StackBytes(_model_frames(live, s.stack_id), s.bytes, s.count) for s in listed]
    while len(msgspec.json.encode(stacks)) > MAX_STACKS_JSON and len(stacks) > 1:
        stacks.pop()
    return MemorySnapshot(
        time=wall,
        index=live.position or 0,
        total_bytes=live.total_bytes,
        count=live.total_count,
        stack_count=len(live.groups),
        stacks=tuple(stacks),
    )


def _growing(censuses: deque[dict[str, int]]) -> list[SteadyGrowth[str]]:
    """Types (not hawkwatch's own) whose counts rose in most censuses, at most ``MAX_TYPES``."""
    found = steady_growth(list(censuses), min_growth=10, min_fraction=0.75)
    return [g for g in found if not g.key.startswith("hawkwatch.")][:MAX_TYPES]


def resident_reader_unset() -> int:
    """Before ``start``: nothing measured yet."""
    return 0


def resident_reader() -> Callable[[], int]:
    """The process's resident size in bytes: ``/proc/self/statm`` on Linux (no psutil import at
    start-up, ~6 ms), psutil elsewhere."""
    statm = "/proc/self/statm"
    if os.path.exists(statm):
        page = os.sysconf("SC_PAGE_SIZE")

        def from_proc() -> int:
            with open(statm, "rb") as f:
                return int(f.read().split()[1]) * page

        return from_proc
    import psutil

    process = psutil.Process()
    return lambda: int(process.memory_info().rss)
