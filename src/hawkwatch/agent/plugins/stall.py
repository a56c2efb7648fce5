"""Stalls (jank / ANR) of event loops, with the stack that blocked them.

One watchdog thread for every watched loop (``stall_loops``): it pings each loop every
``stall.interval_s``; a loop that has not answered within ``stall.sample_interval_s`` is
sampled (its thread's Python stack, via ``sys._current_frames``) every sample interval until it
answers; a spell that lasted its loop's threshold or more (``stall_thresholds``: 100 ms for
asyncio loops, 400 ms for Qt, Tk and ``heartbeat()`` loops) becomes an ``anr`` record with the
samples, Matrix's point stack, the running asyncio task and the garbage collections that ran
(``stall_record``, imported at the first stall on the watchdog thread, as is the stack capture,
``agent.stacks``: the agent's start loads neither). A spell that shows nothing the program did
(no stack at all, or an asyncio loop idle in its own selector: its thread got no core to take
the answer) is the machine's and is not recorded. The watchdog never calls into a loop except to
post a ping.

The monitor owns a thread, unlike the others, because pings and samples need their own clock:
the scheduler's jobs may be late by exactly the stalls this monitor measures. The clock is
injected (``clock``: monotonic seconds, ``wall``: Unix seconds), so the decisions of one check
(``_tick``) can be tested without waiting for real time to pass.

Stalls the watchdog cannot see while they happen (C code holding the GIL) are still measured
when the late answer arrives; their stack comes from the faulthandler backstop
(``stall_files``). A hang-in-progress marker per stalled loop lets the next launch report a
process killed during a hang as ``hang-kill``.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from collections import deque
from collections.abc import Callable

from hawkwatch.agent.monitor import AgentContext, DeferredFailure, time_key
from hawkwatch.agent.plugins import stall_files as files
from hawkwatch.agent.plugins.stall_discovery import Discovery
from hawkwatch.agent.plugins.stall_loops import BLOCKED, ENDED, TARGETS, PingTarget, Target
from hawkwatch.agent.plugins.stall_thresholds import Thresholds
from hawkwatch.agent.runtime import report_error
from hawkwatch.agent.sampling import IntervalDraw

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, ClassVar

    from hawkwatch.agent.plugins.stall_record import Episode

_DISCOVERY_PERIOD = 0.5
_MARKER_REFRESH = 0.5


class GcClock:
    """Collections and time spent collecting, counted by a ``gc.callbacks`` hook (2 clock reads)."""

    def __init__(self) -> None:
        self.count = 0
        self.total_ns = 0
        self._started = 0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter_ns()
        elif self._started:
            self.total_ns += time.perf_counter_ns() - self._started
            self.count += 1
            self._started = 0

    def now(self) -> tuple[int, int]:
        return self.count, self.total_ns


class StallMonitor:
    name: ClassVar[str] = "stall"

    def __init__(
        self,
        clock: Callable[[], float] = time.perf_counter,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._clock = clock
        self._wall = wall
        self._ctx: AgentContext | None = None
        self._failure = DeferredFailure()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._gc = GcClock()
        self._backstop: files.Backstop | None = None
        self._discovery: Discovery | None = None
        self._episodes: dict[Target, Episode] = {}
        self._gc_ticks: deque[tuple[float, tuple[int, int]]] = deque(maxlen=8)
        self._cpu_marks: dict[Target, float] = {}
        self._due = 0.0
        self._last_check = 0.0
        self._last_pause = 0.0
        self._pending_dumps: dict[int, tuple[float, tuple[Any, ...]]] = {}
        self._watched: frozenset[int] = frozenset()
        self._last_fingerprint: str | None = None
        self._same = 0
        self._next_full = 2
        self._step = 1
        self._last_full_key = ""
        self._library_prefixes: tuple[str, ...] | None = None  # at the first stall
        self._paused = False
        self._draw = IntervalDraw()

    # -- lifecycle -------------------------------------------------------------------------

    def start(self, ctx: AgentContext) -> None:
        self.configure(ctx)
        config = ctx.config.stall
        for kill in files.hang_kills(ctx.session):
            ctx.write_nowait(kill)
        if config.backstop:
            self._backstop = files.Backstop(ctx.session, *self.kinds.backstop(()))
        self._discovery = Discovery(self.kinds.interval("tk"))
        self._discovery.install_import_hook(asyncio=config.asyncio, tk=config.tk)
        gc.callbacks.append(self._gc)
        ctx.every(1.0, self._failure.raise_if_failed, self)
        self._start_thread()

    def configure(self, ctx: AgentContext) -> None:
        """Take the session and thresholds; ``start`` then adds hooks, the backstop and the
        thread (a test drives ``_tick`` itself after this alone)."""
        config = ctx.config.stall
        self._ctx = ctx
        self.kinds = Thresholds.of(config)
        self.interval = self.kinds.fastest()  # the pace while loops are watched: _tick tunes it
        self._watch_threshold = min(config.threshold_s, config.asyncio_threshold_s)
        self.sample_interval = min(config.sample_interval_s, self.interval)
        self.ring_size = config.ring_size
        self.max_frames = config.max_frames
        self._library_prefixes = None

    def _start_thread(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="hawkwatch-stall", daemon=True)
        self._thread.start()

    def _halt_thread(self) -> bool:
        """Stop the watchdog thread, waiting for its current check; True when it ended."""
        thread, self._thread = self._thread, None
        self._stop.set()
        TARGETS.wake.set()
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(timeout=2.0)
        return not thread.is_alive()

    def before_fork(self) -> int:
        """Before fork(): no watchdog mid-check and no faulthandler thread in the child.

        Cancelling a later-dump in a child whose faulthandler thread was not copied would wait
        for it forever; and with no extra threads, Python 3.12+ has no reason to warn. Returns
        how many unnamed OS threads ended (faulthandler's), for the runtime to wait for.
        """
        self._paused = self._thread is not None and self._halt_thread()
        if self._backstop is not None and self._backstop.armed:
            self._backstop.cancel()
            return 1
        return 0

    def after_fork_in_parent(self) -> None:
        if self._paused and self._ctx is not None:
            self._paused = False
            self._start_thread()

    def stop(self) -> None:
        self._paused = False
        stopped = self._halt_thread()
        if stopped and self._ctx is not None:
            try:
                self._flush_at_stop()
            except Exception as exc:  # stopping goes on; the stalls in progress are lost
                report_error(self.name, "stop", exc)
        if self._backstop is not None:
            self._backstop.close(remove_if_empty=True)
            self._backstop = None
        if self._discovery is not None:
            self._discovery.remove()
            self._discovery = None
        self._remove_gc_hook()
        self._ctx = None

    def after_fork_child(self) -> None:
        self._thread = None
        self._ctx = None
        if self._backstop is not None:
            self._backstop.forget_after_fork()
            self._backstop = None
        if self._discovery is not None:
            self._discovery.remove()
            self._discovery = None
        self._remove_gc_hook()
        self._episodes.clear()
        TARGETS.clear()

    def _remove_gc_hook(self) -> None:
        while self._gc in gc.callbacks:
            gc.callbacks.remove(self._gc)

    # -- the watchdog thread ---------------------------------------------------------------

    def _run(self) -> None:
        """The watchdog: discover loops now and then, check them, sleep until the next check."""
        next_discovery = 0.0
        while not self._stop.is_set():
            try:
                now = self._clock()
                if now >= next_discovery:
                    self._discover()
                    next_discovery = now + _DISCOVERY_PERIOD
                busy, watching = self._tick(now)
            except Exception as exc:  # disabled by the runtime on the scheduler thread
                self._failure.capture(exc)
                return
            self._sleep(self._pause_after(busy, watching))

    def _pause_after(self, busy: bool, watching: bool) -> float:
        """Sample a stall closely, ping watched loops each interval, else only look for loops."""
        if busy:  # random phase: samples must not lock onto a periodic blocking pattern
            return min(self._draw.jittered(self.sample_interval), self.interval)
        return self.interval if watching else _DISCOVERY_PERIOD

    def _sleep(self, pause: float) -> None:
        self._due = self._clock() + pause
        self._last_pause = pause
        wake = TARGETS.wake
        if wake.wait(pause):
            wake.clear()
            self._due = 0.0  # woken early on purpose: not a late wake-up

    def _discover(self) -> None:
        ctx, discovery = self._ctx, self._discovery
        if ctx is None or discovery is None:
            return
        config = ctx.config.stall
        if config.asyncio:
            discovery.asyncio()
        if config.tk:
            discovery.tk()
        if config.qt:
            discovery.qt()
        TARGETS.drop_dead_threads()

    def _tick(self, now: float) -> tuple[bool, bool]:
        """One check of every watched loop at ``now`` (``clock`` time); (busy, watching)."""
        targets = TARGETS.snapshot()
        self._note_watched_threads(targets)
        self._collect_backstop_dump(targets)
        self._gc_ticks.append((now, self._gc.now()))
        if targets:  # the pace and the lateness that matter: those of the most demanding loop
            self.interval = self.kinds.pace(t.kind for t in targets)
            self._watch_threshold = min(self.kinds.threshold(t.kind) for t in targets)
        starved = now - self._due >= self._watch_threshold / 2 if self._due else False
        busy = False
        for target in targets:
            busy |= self._check(target, now, starved)
        self._last_check = now
        for gone in [t for t in self._episodes if t.gone]:
            self._close(self._episodes.pop(gone))
        self._rearm_backstop(targets, now)
        return busy, bool(targets)

    def _note_watched_threads(self, targets: list[Target]) -> None:
        """Keep ``stall-watched.json`` naming the loop threads, for a dump read after a kill."""
        known = frozenset(t.thread_id for t in targets if t.thread_id)
        if known != self._watched and self._ctx is not None:
            self._watched = known
            watched = {t.thread_id: {"loop": t.kind, "thread": t.thread_name} for t in targets}
            files.write_watched(self._ctx.session, {k: v for k, v in watched.items() if k})

    def _collect_backstop_dump(self, targets: list[Target]) -> None:
        """Keep what the backstop wrote for each watched loop, until its stall is judged."""
        dump = self._backstop.take() if self._backstop is not None else None
        if dump is None:
            return
        when, by_thread = dump
        for target in targets:
            if target.thread_id in by_thread:
                self._pending_dumps[target.thread_id] = (when, by_thread[target.thread_id])

    def _rearm_backstop(self, targets: list[Target], now: float) -> None:
        backstop = self._backstop
        if backstop is None:
            return
        if targets:
            backstop.retune(*self.kinds.backstop({t.kind for t in targets}))
            backstop.arm(now)
        else:
            backstop.cancel()

    def _check(self, target: Target, now: float, starved: bool) -> bool:
        """Judge one loop: blocked (sample it), just recovered (record a stall if long
        enough), or fine (maybe after a stall the watchdog slept through). True while blocked."""
        interval = self.kinds.interval(target.kind)
        state, start, end, earliest = target.poll(now, interval, self.sample_interval)
        cpu, cpu_before = self._cpu_since_last_check(target)
        if state == BLOCKED:
            return self._while_blocked(target, start, earliest, now)
        episode = self._episodes.get(target)
        long_enough = state == ENDED and self._long_enough(target.kind, start, earliest, end)
        if long_enough and target.thread_id:
            self._recovered(target, episode or self._open(target, start, earliest), end)
        elif episode is not None:
            self._close(self._episodes.pop(target))
        elif starved and cpu is not None and cpu_before is not None:
            self._late(target, now, cpu - cpu_before)
        self._pending_dumps.pop(target.thread_id, None)
        return False

    def _close(self, episode: Episode) -> None:
        """A spell that did not reach the threshold, or a late one that ended before the ping."""
        if episode.late_end is None:
            self._discard(episode)
        else:
            self._finish(episode, episode.late_end)

    def _cpu_since_last_check(self, target: Target) -> tuple[float | None, float | None]:
        """The loop thread's CPU time now and at the previous check."""
        cpu = target.cpu_time()
        before = self._cpu_marks.get(target)
        if cpu is None:
            self._cpu_marks.pop(target, None)
        else:
            self._cpu_marks[target] = cpu
        return cpu, before

    def _while_blocked(self, target: Target, start: float, earliest: float, now: float) -> bool:
        """Sample the blocked loop's stack; past the threshold, write the hang marker."""
        if not target.thread_id:
            return False
        from hawkwatch.agent import stacks
        from hawkwatch.agent.plugins.stall_record import safe_task_info, thread_count

        episode = self._episodes.get(target)
        if episode is None:
            episode = self._open(target, start, earliest)
            if isinstance(target, PingTarget):
                episode.task = safe_task_info(target.asyncio_loop(), self.max_frames)
        self._attach_dump(target, episode)
        stack = stacks.thread_stack(target.thread_id, self.max_frames)
        episode.add(self._clock(), stack, thread_count())
        if self._long_enough(target.kind, start, earliest, now):
            self._mark(episode, now)
        return True

    def _recovered(self, target: Target, episode: Episode, end: float) -> None:
        """The loop answered again after a spell over the threshold: record the stall."""
        self._attach_dump(target, episode)
        self._episodes.pop(target, None)
        self._finish(episode, end)

    def _long_enough(self, kind: str, start: float, earliest: float, end: float) -> bool:
        """Whether a spell is a stall: it may have lasted the threshold, and likely half of it.

        The first half: with pings an interval apart, the estimate alone would miss about half
        of the stalls of exactly the threshold. The second: when the watchdog itself had to
        wait (for the GIL), the last answer can lie long before the spell; a loop that then
        answers after 60 ms is no stall of the threshold. A loop pinged only once a threshold
        (asyncio's 100 ms) needs its estimate to reach the whole threshold (``Thresholds.needed``):
        else a loaded machine that leaves the loop's thread without a core for 60–90 ms would
        count as stalls.
        """
        threshold = self.kinds.threshold(kind)
        return end - earliest >= threshold and end - start >= self.kinds.needed(kind)

    def _late(self, target: Target, now: float, burned: float) -> None:
        """The watchdog itself could not run (C code held the GIL) and no ping was in flight.

        If the loop's thread burned at least a quarter of the time the watchdog waited as CPU
        (a quarter: on a busy machine the thread holding the GIL still waits for a core), it
        held the GIL: the loop stalled from (about) the watchdog's last check, which was on
        time, to now. Its stack comes from the backstop dump, else from a sample taken now,
        while the thread is often still in the function that made the blocking call. Only when
        the watchdog was watching closely (its last pause at most one interval: the start is
        known to that interval), and never without a stack to show.
        """
        # The stall began after the last check, and before the wake-up that did not happen.
        start = self._last_check + self._last_pause / 2
        gap = now - self._last_check
        long_enough = gap >= self.kinds.threshold(target.kind) and (
            now - start >= self.kinds.needed(target.kind)
        )
        if not long_enough or burned < gap / 4 or self._last_pause > self.interval:
            return
        episode = self._open(target, start, self._last_check)
        self._attach_dump(target, episode)
        if not episode.backstop:
            from hawkwatch.agent import stacks
            from hawkwatch.agent.plugins.stall_record import thread_count

            stack = stacks.thread_stack(target.thread_id, self.max_frames)
            if not stack:
                self._episodes.pop(target, None)
                return
            episode.add(now, stack, thread_count())
        # Judged at the next check: the loop may still be blocked (collections one after the
        # other let the watchdog in between), and the ping sent now then continues this spell.
        episode.late_end = now

    def _open(self, target: Target, start: float, earliest: float) -> Episode:
        from hawkwatch.agent.plugins.stall_record import Episode

        episode = Episode(
            kind=target.kind,
            thread_id=target.thread_id,
            thread_name=target.thread_name,
            start=start,
            earliest=earliest,
            wall_offset=self._wall() - self._clock(),
            gc_mark=self._gc_mark(start),
            ring_size=self.ring_size,
        )
        self._episodes[target] = episode
        return episode

    def _gc_mark(self, start: float) -> tuple[int, int]:
        """The GC clock at the last check before ``start`` (collections since then ran in it)."""
        before = [mark for when, mark in self._gc_ticks if when <= start]
        if before:
            return before[-1]
        return self._gc_ticks[0][1] if self._gc_ticks else self._gc.now()

    def _attach_dump(self, target: Target, episode: Episode) -> None:
        dump = self._pending_dumps.pop(target.thread_id, None)
        if dump is not None:
            episode.add_backstop(dump[0], dump[1])

    def _mark(self, episode: Episode, now: float) -> None:
        """Write (or refresh) the hang-in-progress marker of a stall past the threshold."""
        ctx = self._ctx
        if ctx is None or (
            episode.marker is not None and now - episode.marker_written < _MARKER_REFRESH
        ):
            return
        path = episode.marker or files.marker_path(ctx.session, episode.thread_id)
        info = {
            "pid": os.getpid(),
            "start": round(episode.wall(episode.start), 6),
            "last_seen": round(episode.wall(now), 6),
            "thread": episode.thread_name,
            "thread_id": episode.thread_id,
            "loop": episode.kind,
        }
        files.write_marker(path, info, episode.first_stack())
        episode.marker, episode.marker_written = path, now

    def _discard(self, episode: Episode) -> None:
        if episode.marker is not None:
            try:
                os.unlink(episode.marker)
            except OSError:
                pass
            episode.marker = None

    def _finish(self, episode: Episode, end: float, *, unfinished: bool = False) -> None:
        ctx = self._ctx
        if ctx is None:
            return
        from hawkwatch.agent.plugins.stall_record import (
            build_value,
            compact_value,
            encode_parts,
            shows_the_program,
        )

        if not unfinished and not shows_the_program(episode):
            self._discard(episode)  # the machine's: never a record without the program's stack
            return
        value = build_value(
            episode,
            end=end,
            gc_now=self._gc.now(),
            is_library=self._is_library,
            unfinished=unfinished,
        )
        key_base = time_key(value.start_from)
        fingerprint = value.fingerprint
        if fingerprint is not None and fingerprint == self._last_fingerprint:
            self._same += 1
            if self._same < self._next_full:
                value = compact_value(value, self._last_full_key, self._same)
            else:  # the back-off window grows, Fibonacci-like, as in Matrix
                self._step, self._next_full = self._next_full, self._next_full + self._step
                self._last_full_key = f"{key_base}_0"
        else:
            self._last_fingerprint = fingerprint
            self._same, self._next_full, self._step = 0, 2, 1
            self._last_full_key = f"{key_base}_0"
        for key, part in encode_parts(key_base, value, ctx.session.folder):
            ctx.write_nowait(part, key)
        self._discard(episode)

    def _flush_at_stop(self) -> None:
        """At stop: a stall still going on and an unread backstop dump become records."""
        now = self._clock()
        for target, episode in list(self._episodes.items()):
            if episode.late_end is not None:
                self._close(episode)
            elif now - episode.earliest >= self.kinds.threshold(episode.kind):
                self._attach_dump(target, episode)
                self._finish(episode, now, unfinished=True)
            else:
                self._discard(episode)
        self._episodes.clear()
        backstop = self._backstop
        dump = backstop.take() if backstop is not None else None
        if dump is None or backstop is None:
            return
        when, by_thread = dump
        from hawkwatch.agent.plugins.stall_record import Episode

        watched = {t.thread_id: t for t in TARGETS.snapshot() if t.thread_id}
        for thread_id, stack in by_thread.items():
            loop_target = watched.get(thread_id)
            if loop_target is None or self.kinds.threshold(loop_target.kind) > backstop.timeout:
                continue  # not a loop, or the dump came sooner than this loop's threshold
            episode = Episode(
                kind=loop_target.kind,
                thread_id=thread_id,
                thread_name=loop_target.thread_name,
                start=when - backstop.timeout,
                earliest=when - backstop.timeout,
                wall_offset=0.0,
                gc_mark=self._gc.now(),
                ring_size=self.ring_size,
            )
            episode.add_backstop(when, stack)
            self._finish(episode, when, unfinished=True)

    def _is_library(self, path: str) -> bool:
        prefixes = self._library_prefixes
        if prefixes is None:  # sysconfig's paths cost ~4 ms: found at the first stall, not start
            from hawkwatch.agent.plugins.stall_record import library_prefixes

            prefixes = self._library_prefixes = library_prefixes()
        return path.startswith(prefixes)
