"""High-load trace: MTHawkeye's CPU Trace for Python (``detectors.md`` §2.1, §2.3).

Every ``cpu.check_interval_s`` (1 s) the process CPU since the last check is compared with
``cpu.highload_threshold`` (0.8 = 80 % of one core; the sum over threads, so it can exceed 1.0;
``cpu.per_core`` divides by the core count first). While high, checks run every
``cpu.check_interval_busy_s`` (0.3 s) and each check samples the stacks of the Python threads
that took more than ``cpu.thread_share`` (15 %) of the process CPU since the previous one; the
samples are merged into a call tree. An episode that lasted ``cpu.highload_min_duration_s``
(60 s) is written as ``cpu-highload`` (key = start, value ``{start, lasting, average}`` as
MTHawkeye's strings, plus ``threads``: per-thread shares) and ``cpu-highload-stackframe`` (same
key, MTHawkeye's node array), or the side file ``cpu-highload-stackframe-ext`` when the tree's
JSON reaches 15 KB. Unlike MTHawkeye, a long episode is also written every
``highload_min_duration_s`` while it lasts (readers keep the last record of a key) and when the
agent stops, so a kill loses at most one period.

The episode logic (``EpisodeTracker``) takes readings and times as arguments, so tests step it;
the monitor feeds it from ``/proc`` (``threads_cpu``) on the scheduler thread, at waits drawn
uniformly within ±50 % of the interval (``agent.sampling``: a fixed period would phase-lock with
periodic work). An episode ends below ``highload_exit_ratio`` × the threshold or after
``highload_exit_checks`` checks in a row below it (hysteresis); the longest burn that ended
shorter than ``highload_min_duration_s`` is kept in ``session.json`` (``cpu.longest_short_burn``)
so the report can say why no episode shows. Under ``hawkwatch run`` with py-spy, the supervisor
rewrites each episode's tree from py-spy's samples (``pyspy_store``). The agent's own threads
(``hawkwatch-*``) are never sampled.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Mapping

from hawkwatch.agent.monitor import AgentContext
from hawkwatch.agent.sampling import IntervalDraw
from hawkwatch.agent.threads_cpu import ThreadCpuReader
from hawkwatch.config import CpuConfig
from hawkwatch.model import collections as c

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import ClassVar

    from hawkwatch.model.records import CpuHighLoad, CpuHighLoadStackframe, TypedRecord
    from hawkwatch.model.stack import Stack

# The typed model and ``model.profile`` (msgspec) are imported when an episode is written, on
# the scheduler thread, not at every start.

AGENT_THREAD_PREFIX = "hawkwatch"
CLOCK: Callable[[], float] = time.monotonic
"""Time base of the usage ratio; ``PROCESS_CPU`` the CPU it is the ratio of. A test sets both
(before ``start``) to drive the monitor by the process's own CPU time, whatever the load."""
PROCESS_CPU: Callable[[], float] = time.process_time


class ThreadReading:
    """A thread's CPU seconds used since the previous check."""

    __slots__ = ("cpu_delta_s", "ident", "name", "native_id")

    def __init__(self, native_id: int, name: str, ident: int | None, cpu_delta_s: float) -> None:
        self.native_id = native_id
        self.name = name
        self.ident = ident
        self.cpu_delta_s = cpu_delta_s

    def __repr__(self) -> str:
        return (
            f"ThreadReading({self.native_id!r}, {self.name!r}, {self.ident!r}, "
            f"{self.cpu_delta_s!r})"
        )


class Episode:
    """An episode in progress: start, usage sum, merged samples, CPU per thread."""

    __slots__ = (
        "checks",
        "last_unix",
        "stacks",
        "start_unix",
        "thread_cpu",
        "usage_sum",
        "written_at",
    )

    def __init__(  # noqa: PLR0917 - one argument per attribute, as the Struct had
        self,
        start_unix: float,
        last_unix: float,
        usage_sum: float = 0.0,
        checks: int = 0,
        stacks: dict[Stack, int] | None = None,
        thread_cpu: dict[tuple[int, str], float] | None = None,
        written_at: float = 0.0,
    ) -> None:
        self.start_unix = start_unix
        self.last_unix = last_unix
        self.usage_sum = usage_sum
        self.checks = checks
        self.stacks: dict[Stack, int] = stacks if stacks is not None else {}
        self.thread_cpu: dict[tuple[int, str], float] = (
            thread_cpu if thread_cpu is not None else {}
        )
        self.written_at = written_at

    @property
    def lasting_s(self) -> float:
        return self.last_unix - self.start_unix

    @property
    def average(self) -> float:
        return self.usage_sum / self.checks if self.checks else 0.0


class EpisodeTracker:
    """The episode state machine; returns the episodes to write, never touches I/O."""

    def __init__(self, config: CpuConfig) -> None:
        self.config = config
        self.episode: Episode | None = None
        self.low_checks = 0
        self.longest_short: Episode | None = None
        """The longest burn that ended before ``highload_min_duration_s``: the report's hint."""
        self.short_changed = False

    @property
    def is_high(self) -> bool:
        return self.episode is not None

    def observe(
        self,
        now_unix: float,
        usage: float,
        threads: list[ThreadReading],
        sample: Callable[[list[int]], Mapping[int, Stack]],
    ) -> list[Episode]:
        """One check: ``usage`` (1.0 = one core) over the last interval; ``sample(idents)``
        returns the current stacks of those Python threads. Returns episodes due for writing.

        Hysteresis: an episode ends at the first check below ``highload_exit_ratio`` × the
        threshold, or after ``highload_exit_checks`` checks in a row below the threshold; a
        check in between neither ends nor extends it, so a load hovering at the threshold is
        one episode, not many."""
        config = self.config
        due: list[Episode] = []
        episode = self.episode
        if usage < config.highload_threshold:
            if episode is None:
                return due
            self.low_checks += 1
            exit_level = config.highload_threshold * config.highload_exit_ratio
            if usage >= exit_level and self.low_checks < config.highload_exit_checks:
                return due
            self.episode = None
            if episode.lasting_s >= config.highload_min_duration_s:
                due.append(episode)
            else:
                self._note_short(episode)
            return due
        self.low_checks = 0
        if episode is None:
            episode = self.episode = Episode(now_unix, now_unix, written_at=now_unix)
        episode.last_unix = now_unix
        episode.usage_sum += usage
        episode.checks += 1
        total = sum(t.cpu_delta_s for t in threads)
        chosen: list[int] = []
        for reading in threads:
            key = (reading.native_id, reading.name)
            episode.thread_cpu[key] = episode.thread_cpu.get(key, 0.0) + reading.cpu_delta_s
            is_busy = total > 0 and reading.cpu_delta_s / total > config.thread_share
            if is_busy and reading.ident is not None:
                chosen.append(reading.ident)
        if chosen:
            for stack in sample(chosen).values():
                if stack:
                    episode.stacks[stack] = episode.stacks.get(stack, 0) + 1
        period = config.highload_min_duration_s
        if episode.lasting_s >= period and now_unix - episode.written_at >= period:
            episode.written_at = now_unix
            due.append(episode)
        return due

    def _note_short(self, episode: Episode) -> None:
        longest = self.longest_short
        if longest is None or episode.lasting_s > longest.lasting_s:
            self.longest_short = episode
            self.short_changed = True

    def flush(self) -> list[Episode]:
        """At stop: the running episode, if it already qualifies."""
        episode, self.episode = self.episode, None
        if episode is not None and episode.lasting_s >= self.config.highload_min_duration_s:
            return [episode]
        if episode is not None:
            self._note_short(episode)
        return []


def short_burn_value(episode: Episode, min_duration_s: float) -> dict[str, float]:
    """``session.json`` → ``cpu.longest_short_burn``: what the report says when no episode was
    long enough (``ShortBurn`` in the report model)."""
    return {
        "start": round(episode.start_unix, 6),
        "lasting_s": round(episode.lasting_s, 3),
        "average_percent": round(episode.average * 100, 2),
        "min_duration_s": min_duration_s,
    }


def episode_records(episode: Episode) -> tuple[CpuHighLoad, CpuHighLoadStackframe]:
    """The ``cpu-highload`` and ``cpu-highload-stackframe`` records of an episode."""
    from hawkwatch.model.profile import IN_PROCESS
    from hawkwatch.model.records import CpuHighLoad, CpuHighLoadStackframe, ThreadShareValue

    total = sum(episode.thread_cpu.values())
    threads = sorted(episode.thread_cpu.items(), key=lambda item: -item[1])
    load = CpuHighLoad(
        start=episode.start_unix,
        lasting=episode.lasting_s,
        average=episode.average * 100,
        sampler=IN_PROCESS,
        threads=tuple(
            ThreadShareValue(name, tid, round(cpu / total, 4))
            for (tid, name), cpu in threads
            if total > 0 and cpu > 0
        )[:16],
    )
    # imported when an episode is written (scheduler thread, paused at fork), not at start
    from hawkwatch.analysis.calltree import build_roots

    tree = CpuHighLoadStackframe(key=load.record_key(), roots=build_roots(episode.stacks.items()))
    return load, tree


class CpuHighLoadMonitor:
    name: ClassVar[str] = "cpu"

    def __init__(self) -> None:
        self.clock = CLOCK
        self.process_cpu = PROCESS_CPU
        self._ctx: AgentContext | None = None
        self._tracker: EpisodeTracker | None = None
        self._reader = ThreadCpuReader()
        self._last_check = 0.0
        self._last_cpu: tuple[float, float] | None = None  # (monotonic s, process CPU s)
        self._last_threads: dict[int, float] = {}
        self._cores = os.cpu_count() or 1
        self._lock = threading.Lock()

    def start(self, ctx: AgentContext) -> None:
        self._ctx = ctx
        config = ctx.config.cpu
        self._tracker = EpisodeTracker(config)
        self._last_cpu = (self.clock(), self.process_cpu())
        self._last_threads = self._reader.read_all()
        self._last_check = self.clock()
        ctx.session.update_metadata(
            "cpu", {"thread_cpu_source": self._reader.source, "cores": self._cores}
        )
        tick = min(config.check_interval_busy_s, config.check_interval_s)
        ctx.every(tick, self.check, self, IntervalDraw().jittered)  # samples at random phase

    def check(self) -> None:
        """Scheduled every busy interval; does the idle-rate check only once per idle interval."""
        ctx, tracker = self._ctx, self._tracker
        if ctx is None or tracker is None or self._last_cpu is None:
            return
        now = self.clock()
        idle_interval = ctx.config.cpu.check_interval_s
        if not tracker.is_high and now - self._last_check < idle_interval * 0.95:
            return
        self._last_check = now
        cpu = self.process_cpu()
        then, then_cpu = self._last_cpu
        self._last_cpu = (now, cpu)
        if now <= then:
            return
        usage = (cpu - then_cpu) / (now - then)
        if ctx.config.cpu.per_core:
            usage /= self._cores
        threads = self._thread_readings()
        with self._lock:
            due = tracker.observe(time.time(), usage, threads, self._sample)
        for episode in due:
            self._write(ctx, episode, ctx.write)
        self._note_short_burn(ctx, tracker)

    def _note_short_burn(self, ctx: AgentContext, tracker: EpisodeTracker) -> None:
        if not tracker.short_changed or tracker.longest_short is None:
            return
        tracker.short_changed = False
        metadata = ctx.session.metadata
        section = metadata.setdefault("cpu", {})
        section["longest_short_burn"] = short_burn_value(
            tracker.longest_short, ctx.config.cpu.highload_min_duration_s
        )
        ctx.session.write_metadata(metadata)

    def _thread_readings(self) -> list[ThreadReading]:
        current = self._reader.read_all()
        previous, self._last_threads = self._last_threads, current
        from hawkwatch.agent.stacks import native_ids

        python = native_ids()
        readings: list[ThreadReading] = []
        for tid, cpu_s in current.items():
            thread = python.get(tid)
            name = thread.name if thread is not None else f"native-{tid}"
            if name.startswith(AGENT_THREAD_PREFIX):
                continue
            ident = thread.ident if thread is not None else None
            readings.append(
                ThreadReading(tid, name, ident, max(cpu_s - previous.get(tid, cpu_s), 0))
            )
        return readings

    def _sample(self, idents: list[int]) -> dict[int, Stack]:
        from hawkwatch.agent.stacks import frame_stack  # while high (scheduler thread)

        frames = sys._current_frames()
        me = threading.get_ident()
        depth = self._ctx.config.cpu.max_frames if self._ctx else 50
        return {
            ident: frame_stack(frames.get(ident), depth)
            for ident in idents
            if ident != me and ident in frames
        }

    def _write(
        self, ctx: AgentContext, episode: Episode, write: Callable[[TypedRecord], None]
    ) -> None:
        from hawkwatch.model.profile import EXT_RECORD_END, EXT_THRESHOLD_BYTES

        load, tree = episode_records(episode)
        write(load)
        value = tree.encode_value()
        if len(value) >= EXT_THRESHOLD_BYTES:
            path = ctx.session.path / c.CPU_HIGHLOAD_STACKFRAME_EXT
            with open(path, "ab") as f:
                f.write(b"%s,%s%s" % (tree.key.encode(), value, EXT_RECORD_END.encode()))
        else:
            write(tree)

    def stop(self) -> None:
        ctx, tracker = self._ctx, self._tracker
        self._ctx = None
        if ctx is None or tracker is None:
            return
        with self._lock:
            due = tracker.flush()
        for episode in due:
            self._write(ctx, episode, ctx.write_nowait)
        self._note_short_burn(ctx, tracker)

    def after_fork_child(self) -> None:
        self._ctx = None
        self._tracker = None
