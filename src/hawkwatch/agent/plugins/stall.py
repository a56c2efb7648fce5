"""Stalls (jank / ANR) of event loops, with the stack that blocked them.

One watchdog thread for every watched loop (``stall_loops``): it pings each loop every
``stall.interval_s``; a loop that has not answered within ``stall.sample_interval_s`` is
sampled (its thread's Python stack, via ``sys._current_frames``) every sample interval until it
answers; a spell that lasted its loop's threshold or more (``stall.asyncio_threshold_s``, 100 ms,
for asyncio loops; ``stall.threshold_s``, 400 ms, for the others) becomes an ``anr`` record with the
samples, Matrix's point stack, the running asyncio task and the garbage collections that ran
(``stall_record``). The watchdog never calls into a loop except to post a ping.

The monitor owns a thread, unlike the others, because pings and samples need their own clock:
the scheduler's jobs may be late by exactly the stalls this monitor measures.

Stalls the watchdog cannot see while they happen (C code holding the GIL) are still measured
when the late answer arrives; their stack comes from the faulthandler backstop
(``stall_files``). A hang-in-progress marker per stalled loop lets the next launch report a
process killed during a hang as ``hang-kill``.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sysconfig
import threading
import time
from collections import deque
from typing import Any, ClassVar

from hawkwatch.agent import stacks
from hawkwatch.agent.monitor import AgentContext, DeferredFailure, time_key, to_json
from hawkwatch.agent.plugins import stall_files as files
from hawkwatch.agent.plugins.stall_discovery import Discovery
from hawkwatch.agent.plugins.stall_loops import BLOCKED, ENDED, TARGETS, PingTarget, Target
from hawkwatch.agent.plugins.stall_record import (
    Episode,
    build_value,
    compact_value,
    encode_parts,
    task_info,
    thread_count,
)
from hawkwatch.model import collections as c

_DISCOVERY_PERIOD = 0.5
_MARKER_REFRESH = 0.5
_fork_hooks_installed = False
_active: StallMonitor | None = None


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

    def __init__(self) -> None:
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
        self._library_prefixes: tuple[str, ...] = ()
        self._paused = False

    # -- lifecycle -------------------------------------------------------------------------

    def start(self, ctx: AgentContext) -> None:
        global _active
        config = ctx.config.stall
        self._ctx = ctx
        # Per kind of loop: asyncio loops have their own (lower) threshold, the others share one.
        self.threshold = config.threshold_s
        self._thresholds = {"asyncio": config.asyncio_threshold_s}
        # Pings every interval_s, at most half the threshold for the shared one (as always), at
        # most the threshold for asyncio's 100 ms: pinging asyncio loops twice as often would
        # double the monitor's cost for what only sharpens the estimate of stalls near 100 ms.
        self._intervals = {"": min(config.interval_s, self.threshold / 2)} | {
            kind: min(config.interval_s, threshold) for kind, threshold in self._thresholds.items()
        }
        smallest = min(self.threshold, *self._thresholds.values())
        self.interval = min(self._intervals.values())  # the watchdog's pace, at its fastest
        self._watch_interval = self.interval
        self._watch_threshold = smallest
        self.sample_interval = min(config.sample_interval_s, self.interval)
        self.ring_size = config.ring_size
        self.max_frames = config.max_frames
        self._library_prefixes = ()  # found at the first stall (sysconfig: ~2 ms at start)
        for value in files.hang_kills(ctx.session):
            key = time_key(value.get("last_seen") or time.time())
            ctx.store_nowait(c.HANG_KILL, key, to_json(value))
        if config.backstop:
            # fires after at least two missed checks, so a watchdog a little late never trips it
            timeout = max(smallest, 2 * self.interval)
            rearm_every = max(self.interval, timeout - 2 * self.interval)
            self._backstop = files.Backstop(ctx.session, timeout, rearm_every)
        self._discovery = Discovery(self._intervals[""])
        self._discovery.install_import_hook(asyncio=config.asyncio, tk=config.tk)
        gc.callbacks.append(self._gc)
        _install_fork_hooks()
        _active = self
        ctx.every(1.0, self._failure.raise_if_failed, self)
        self._start_thread()

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

    def pause_for_fork(self) -> None:
        """Before fork(): no watchdog mid-check and no faulthandler thread in the child.

        Cancelling a later-dump in a child whose faulthandler thread was not copied would wait
        for it forever; and with no extra threads, Python 3.12+ has no reason to warn.
        """
        self._paused = self._thread is not None and self._halt_thread()
        if self._backstop is not None:
            self._backstop.cancel()

    def resume_after_fork(self) -> None:
        if self._paused and self._ctx is not None:
            self._paused = False
            self._start_thread()

    def stop(self) -> None:
        global _active
        self._paused = False
        stopped = self._halt_thread()
        if stopped and self._ctx is not None:
            with contextlib.suppress(Exception):
                self._flush_at_stop()
        if self._backstop is not None:
            self._backstop.close(remove_if_empty=True)
            self._backstop = None
        if self._discovery is not None:
            self._discovery.remove()
            self._discovery = None
        self._remove_gc_hook()
        if _active is self:
            _active = None
        self._ctx = None

    def after_fork_child(self) -> None:
        global _active
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
        _active = None

    def _remove_gc_hook(self) -> None:
        while self._gc in gc.callbacks:
            gc.callbacks.remove(self._gc)

    # -- the watchdog thread ---------------------------------------------------------------

    def _run(self) -> None:
        next_discovery = 0.0
        while not self._stop.is_set():
            try:
                now = time.perf_counter()
                if now >= next_discovery:
                    self._discover()
                    next_discovery = now + _DISCOVERY_PERIOD
                busy, watching = self._tick(now)
            except Exception as exc:  # disabled by the runtime on the scheduler thread
                self._failure.capture(exc)
                return
            if busy:
                pause = self.sample_interval
            elif watching:
                pause = self._watch_interval
            else:
                pause = _DISCOVERY_PERIOD
            self._due = time.perf_counter() + pause
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
        targets = TARGETS.snapshot()
        known = frozenset(t.thread_id for t in targets if t.thread_id)
        if known != self._watched and self._ctx is not None:
            self._watched = known
            watched = {t.thread_id: {"loop": t.kind, "thread": t.thread_name} for t in targets}
            files.write_watched(self._ctx.session, {k: v for k, v in watched.items() if k})
        backstop = self._backstop
        if backstop is not None:
            dump = backstop.take()
            if dump is not None:
                when, by_thread = dump
                for target in targets:
                    if target.thread_id in by_thread:
                        self._pending_dumps[target.thread_id] = (when, by_thread[target.thread_id])
        self._gc_ticks.append((now, self._gc.now()))
        busy = False
        if targets:  # the pace and the lateness that matters: those of the most demanding loop
            self._watch_interval = min(self._interval_for(t.kind) for t in targets)
            self._watch_threshold = min(self._threshold_for(t.kind) for t in targets)
        starved = now - self._due >= self._watch_threshold / 2 if self._due else False
        for target in targets:
            busy |= self._check(target, now, starved)
        self._last_check = now
        for gone in [t for t in self._episodes if t.gone]:
            self._discard(self._episodes.pop(gone))
        if backstop is not None:
            if targets:
                backstop.arm(now)
            else:
                backstop.cancel()
        return busy, bool(targets)

    def _check(self, target: Target, now: float, starved: bool) -> bool:
        threshold = self._threshold_for(target.kind)
        state, start, end, earliest = target.poll(
            now, self._interval_for(target.kind), self.sample_interval
        )
        episode = self._episodes.get(target)
        cpu = target.cpu_time()
        cpu_before = self._cpu_marks.get(target)
        if cpu is not None:
            self._cpu_marks[target] = cpu
        if state == BLOCKED:
            if not target.thread_id:
                return False
            if episode is None:
                episode = self._open(target, start, earliest)
                if isinstance(target, PingTarget):
                    episode.task = _safe_task_info(target.asyncio_loop(), self.max_frames)
            self._attach_dump(target, episode)
            episode.add(
                time.perf_counter(),
                stacks.thread_stack(target.thread_id, self.max_frames),
                thread_count(),
            )
            if self._long_enough(start, earliest, now, threshold):
                self._mark(episode, now)
            return True
        if (
            state == ENDED
            and self._long_enough(start, earliest, end, threshold)
            and target.thread_id
        ):
            if episode is None:
                episode = self._open(target, start, earliest)
            self._attach_dump(target, episode)
            self._episodes.pop(target, None)
            self._finish(episode, end)
        elif episode is not None:
            self._discard(self._episodes.pop(target))
        elif starved and cpu is not None and cpu_before is not None:
            self._late(target, now, cpu - cpu_before)
        if cpu is None:
            self._cpu_marks.pop(target, None)
        self._pending_dumps.pop(target.thread_id, None)
        return False

    def _threshold_for(self, kind: str) -> float:
        return self._thresholds.get(kind, self.threshold)

    def _interval_for(self, kind: str) -> float:
        return self._intervals.get(kind, self._intervals[""])

    def _long_enough(self, start: float, earliest: float, end: float, threshold: float) -> bool:
        """Whether a spell is a stall: it may have lasted the threshold, and likely half of it.

        The first half: with pings an interval apart, the estimate alone would miss about half
        of the stalls of exactly the threshold. The second: when the watchdog itself had to
        wait (for the GIL), the last answer can lie long before the spell; a loop that then
        answers after 60 ms is no stall of the threshold.

        A loop with a threshold under ``stall.threshold_s`` (asyncio's 100 ms) is pinged at
        half its threshold, so "may have lasted" is a coarse bound: there the estimate itself
        must reach the threshold. Otherwise a busy machine that leaves the loop's thread
        without a core for 60–90 ms would count as stalls (the clean run of
        ``benchmarks/stall_accuracy.py`` on a loaded 2-core machine: dozens in 30 s).
        """
        if end - earliest < threshold:
            return False
        return end - start >= (threshold if threshold < self.threshold else threshold / 2)

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
        too_short = gap < self._threshold_for(target.kind)
        if too_short or burned < gap / 4 or self._last_pause > self._watch_interval:
            return
        episode = self._open(target, start, self._last_check)
        self._attach_dump(target, episode)
        if not episode.backstop:
            stack = stacks.thread_stack(target.thread_id, self.max_frames)
            if not stack:
                self._episodes.pop(target, None)
                return
            episode.add(now, stack, thread_count())
        self._episodes.pop(target, None)
        self._finish(episode, now)

    def _open(self, target: Target, start: float, earliest: float) -> Episode:
        episode = Episode(
            kind=target.kind,
            thread_id=target.thread_id,
            thread_name=target.thread_name,
            start=start,
            earliest=earliest,
            wall_offset=time.time() - time.perf_counter(),
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
            with contextlib.suppress(OSError):
                episode.marker.unlink()
            episode.marker = None

    def _finish(self, episode: Episode, end: float, *, unfinished: bool = False) -> None:
        ctx = self._ctx
        if ctx is None:
            return
        value = build_value(
            episode,
            end=end,
            gc_now=self._gc.now(),
            is_library=self._is_library,
            unfinished=unfinished,
        )
        short = value["duration"] < self.threshold * 1000  # what the 100 ms threshold added
        if not unfinished and (_no_stack(value) or (short and _not_the_programs(value))):
            self._discard(episode)  # nothing to show for it: never a record without a stack
            return
        key_base = time_key(value["startFrom"])
        fingerprint = value.get("fingerprint")
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
        for key, text in encode_parts(c.ANR, key_base, value, ctx.session.path):
            ctx.store_nowait(c.ANR, key, text)
        self._discard(episode)

    def _flush_at_stop(self) -> None:
        """At stop: a stall still going on and an unread backstop dump become records."""
        now = time.perf_counter()
        for target, episode in list(self._episodes.items()):
            if now - episode.earliest >= self._threshold_for(episode.kind):
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
        watched = {t.thread_id: t for t in TARGETS.snapshot() if t.thread_id}
        for thread_id, stack in by_thread.items():
            loop_target = watched.get(thread_id)
            if loop_target is None:
                continue
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
        if not self._library_prefixes:
            self._library_prefixes = _library_prefixes()
        return path.startswith(self._library_prefixes)


def _safe_task_info(loop: Any, max_frames: int) -> dict[str, Any] | None:
    try:
        return task_info(loop, max_frames)
    except Exception:  # a task in an odd state must not stop the watchdog
        return None


def _no_stack(value: dict[str, Any]) -> bool:
    return not (value.get("point") or {}).get("frames") and not value.get("stacks")


def _not_the_programs(value: dict[str, Any]) -> bool:
    """A spell that shows nothing the program did: no stack at all, or every stack (samples and
    backstop dump alike) the loop idle in its own selector. Its thread got no core, or no GIL,
    to take the answer: the machine's doing, which asyncio's 100 ms threshold would otherwise
    report on a loaded host."""
    stacks = [stack.get("frames") or [] for stack in value.get("stacks") or []]
    point = (value.get("point") or {}).get("frames") or []
    if point:
        stacks.append(point)
    return all(_idle_in_selector(frames) for frames in stacks)


def _idle_in_selector(frames: list[Any]) -> bool:
    if len(frames) < 2:
        return not frames
    inner, caller = str(frames[0][0]), str(frames[1][0])
    # faulthandler names frames by co_name ("select"), the sampler by qualified name
    return (inner == "select" or inner.endswith("Selector.select")) and caller.endswith("_run_once")


def _library_prefixes() -> tuple[str, ...]:
    """Where the standard library, installed packages and hawkwatch itself live."""
    paths = sysconfig.get_paths()
    found = {
        os.path.join(paths[name], "")
        for name in ("stdlib", "platstdlib", "purelib", "platlib")
        if paths.get(name)
    }
    found.add(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), ""))
    found.add("<frozen ")
    return tuple(sorted(found))


# -- fork: the watchdog and faulthandler's later-dump thread are paused around it -----------


def _install_fork_hooks() -> None:
    global _fork_hooks_installed
    if _fork_hooks_installed:
        return
    _fork_hooks_installed = True
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_parent)


def _before_fork() -> None:
    monitor = _active
    if monitor is not None:
        with contextlib.suppress(Exception):
            monitor.pause_for_fork()


def _after_fork_parent() -> None:
    monitor = _active
    if monitor is not None:
        with contextlib.suppress(Exception):
            monitor.resume_after_fork()
