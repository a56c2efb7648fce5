"""Continuous profiler: samples every thread's stack at a rate that holds a CPU budget.

Each sample walks ``sys._current_frames()``, interns each stack (thread name as the outermost
pseudo-frame) in a ``StackTable`` and counts it twice: in **wall** mode always; in **cpu** mode
only when the thread used CPU since the previous sample (``threads_cpu``: ``schedstat`` on
Linux), in proportion to how much: each thread earns the CPU it used divided by the time since
the previous sample as credit, and a sample counts when the credit reaches 1. A thread that ran
the whole interval counts every time, one that ran 30 % of it about every third time, one that
woke for a millisecond almost never — so cpu counts are proportional to CPU time.

Waits between samples are drawn from an exponential distribution around the rate's period
(``agent.sampling``): sample times form a Poisson process, so periodic work cannot alias with
the sampler. Such a sampler still only runs when the running thread lets go of the GIL (at
calls and loop back-edges), which biases its stacks toward those points; under ``hawkwatch run``
the supervisor's out-of-process sampler (``hawkwatch.pyspy``) has no such bias, and its windows
are preferred by readers in cpu mode (``Profile.sampler`` tells which made a window).

Every ``profiler.window_s`` the window is written as one ``cpu-profile`` record (key = window
start, value ``model.records.CpuProfile``), or, from 15 KB on, as the side file
``cpu-profile/<key>.json`` with a record that names it. Memory grows with distinct stacks, not
samples.

Rate: the cost of a sample is the time it took (``perf_counter``: the sampler holds the GIL
throughout — nothing in a sample releases it — so no Python thread runs meanwhile) plus
``HANDOFF_ALLOWANCE_S`` for taking the GIL from a running thread and giving it back (two thread
wake-ups and cold caches that the sampler cannot time; ``benchmarks/profiler_overhead.py`` put
the whole loss per sample at 0.13–0.32 ms on a 2-vCPU VM, so the allowance is 0.25 ms and the
budget bounds what the program loses). Its moving average ``cost`` sets the next wait to
``cost / profiler.budget`` (0.003 = 0.3 % of one core), within ``1/max_rate_hz`` …
``1/min_rate_hz``. ``profiler.rate_hz`` > 0 fixes the rate instead (beside py-spy it is
py-spy's rate, and this sampler keeps to its budget share: ``OutsideWatch.fixed_rate``).

Beside py-spy (``runenv.OUTSIDE_SAMPLER_VAR``) that share, 0.2 of the budget, gives ~2 Hz:
enough for wall mode over a run of minutes, which only this sampler records. When py-spy gives
up (no ptrace rights in a container, or it keeps dying) the supervisor creates the file
``runenv.OUTSIDE_STOPPED_VAR`` names; ``OutsideWatch`` looks for it at start, then when the
sampler wakes anyway (at most every 0.25 s) and once a second on the scheduler thread (one failed
``open``, ~2 µs), and from then on this sampler takes the whole budget, or the fixed rate, in a
window of its own, and ``session.json`` says why (``profiler.outside_stopped``).

The sampler runs on its own daemon thread (``hawkwatch-profiler``) rather than the shared
scheduler, because waits of 10 ms must neither delay nor be delayed by other monitors' jobs.
Failures on that thread are kept and raised on the scheduler thread (``DeferredFailure``), where
the runtime's firewall disables the monitor. Like the agent's own threads it is stopped before
``fork()`` and restarted in the parent after it (so a child never inherits it mid-sample and
Python 3.12+ sees no other thread to warn about); the child drops it.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Mapping
from types import CodeType, FrameType
from typing import ClassVar, Final

from hawkwatch._lazylog import lazy_logger
from hawkwatch.agent.monitor import AgentContext, DeferredFailure
from hawkwatch.agent.sampling import IntervalDraw
from hawkwatch.agent.stacks import is_agent_code, py_frame
from hawkwatch.agent.threads_cpu import ThreadCpuReader
from hawkwatch.config import ProfilerConfig
from hawkwatch.errors import StoreError
from hawkwatch.model import collections as c
from hawkwatch.model.profile import EXT_THRESHOLD_BYTES, IN_PROCESS, Profile, thread_frame
from hawkwatch.model.records import CpuProfile
from hawkwatch.model.stack import PyFrame, StackTable
from hawkwatch.runenv import (
    IN_PROCESS_SHARE,
    OUTSIDE_SAMPLER_VAR,
    OUTSIDE_STOPPED_VAR,
    PTRACER_VAR,
)

log = lazy_logger(__name__)

THREAD_NAME: Final = "hawkwatch-profiler"
HANDOFF_ALLOWANCE_S: Final = 250e-6
"""Cost charged per sample on top of its measured time: the GIL hand-over to and from the
sampler (see the module docstring)."""
_COST_WEIGHT: Final = 0.1
"""Weight of the newest sample in the moving average of the sampler's cost."""
_THREADS_REFRESH_S: Final = 1.0
OUTSIDE_CHECK_S: Final = 1.0
"""How often the scheduler looks whether the supervisor's out-of-process sampler gave up (with
its check for a failure of the sampler thread)."""
OUTSIDE_CHECK_SAMPLER_S: Final = 0.25
"""The sampler thread looks too, when it wakes anyway, at most this often: at the share's ~2 Hz
about every sample, so a short program switches ~0.3 s sooner than the scheduler's second."""
_CREDIT_ONE: Final = 0.95
"""Credit that makes a cpu-mode count: a little under 1, so clock granularity cannot make a
thread that ran the whole interval miss a sample."""


class Window:
    """Samples aggregated since the window started (touched by the sampler thread only).

    Stacks go into the window's ``StackTable`` frame by frame rather than through
    ``StackTable.add(frame_stack(frame))``: frames are looked up by ``(id(code), line)`` (a code
    object's own hash is recomputed on every call) and a ``PyFrame`` is built only the first
    time a frame is seen. The code objects are kept alive with their entries, so an id cannot be
    reused within a window.
    """

    def __init__(self, start_unix: float, start_mono: float) -> None:
        self.start_unix = start_unix
        self.start_mono = start_mono
        self.table = StackTable()
        self.counts: dict[int, list[int]] = {}
        self.samples = 0
        self.cost_s = 0.0
        self.max_depth_hit = 0
        self._code_lines: dict[tuple[int, int], tuple[int | None, CodeType]] = {}

    def add_stack(self, frame: FrameType | None, head: PyFrame, depth: int) -> int:
        """Intern the stack ending at ``frame`` (its ``depth`` innermost frames) under the
        thread pseudo-frame ``head``; returns the stack id."""
        walked: list[FrameType] = []
        while frame is not None and len(walked) < depth:
            walked.append(frame)
            frame = frame.f_back
        if len(walked) >= depth:
            self.max_depth_hit += 1
        table, code_lines = self.table, self._code_lines
        parent = table.child(table.frame_id(head), -1)
        for item in reversed(walked):
            code = item.f_code
            line = item.f_lineno or 0
            entry = code_lines.get((id(code), line))
            if entry is None:  # the agent's own frames (its wrappers) are left out: None
                entry = (None if is_agent_code(code) else table.frame_id(py_frame(item)), code)
                code_lines[(id(code), line)] = entry
            if entry[0] is not None:
                parent = table.child(entry[0], parent)
        return parent

    def profile(self, end_mono: float, budget: float) -> Profile:
        duration = max(end_mono - self.start_mono, 1e-9)
        return Profile(
            start_time=self.start_unix,
            duration_s=duration,
            samples=self.samples,
            rate_hz=self.samples / duration,
            table=self.table,
            counts={sid: (pair[0], pair[1]) for sid, pair in self.counts.items()},
            budget=budget,
            cost_s=self.cost_s,
            max_depth_hit=self.max_depth_hit,
            sampler=IN_PROCESS,
        )


class Sampler:
    """Takes one sample of every thread into a window; separate from the thread for tests."""

    def __init__(self, config: ProfilerConfig, reader: ThreadCpuReader | None = None) -> None:
        self.config = config
        self.reader = reader or ThreadCpuReader()
        self._threads: dict[int, tuple[PyFrame, int | None]] = {}  # ident -> (frame, native)
        self._threads_at = -1e9
        self._last_cpu: dict[int, float] = {}
        self._credit: dict[int, float] = {}
        self._last_sample = 0.0

    def _refresh_threads(self, now: float) -> None:
        self._threads = {
            t.ident: (thread_frame(t.name), t.native_id)
            for t in threading.enumerate()
            if t.ident is not None
        }
        self._threads_at = now
        alive = {native for _, native in self._threads.values() if native is not None}
        self.reader.forget_all_but(alive)
        for gone in [n for n in self._last_cpu if n not in alive]:
            del self._last_cpu[gone]
            self._credit.pop(gone, None)

    def close(self) -> None:
        self.reader.close()

    def sample(self, window: Window, skip: int) -> None:
        frames = sys._current_frames()
        now = time.monotonic()
        threads = self._threads
        if now - self._threads_at > _THREADS_REFRESH_S or any(i not in threads for i in frames):
            self._refresh_threads(now)
            threads = self._threads
        depth = self.config.max_depth
        counts, last_cpu, reader = window.counts, self._last_cpu, self.reader
        credit = self._credit
        elapsed, self._last_sample = now - self._last_sample, now
        for ident, frame in frames.items():
            if ident == skip:
                continue
            head, native = threads.get(ident, (thread_frame(f"thread-{ident}"), None))
            if head.func.startswith("thread hawkwatch"):
                continue
            stack_id = window.add_stack(frame, head, depth)
            used = 0
            if native is not None:
                cpu = reader.cpu_seconds_fast(native)
                if cpu is not None:
                    previous = last_cpu.get(native)
                    last_cpu[native] = cpu
                    if previous is not None and cpu > previous and elapsed > 0:
                        earned = min(credit.get(native, 0.0) + (cpu - previous) / elapsed, 2.0)
                        if earned >= _CREDIT_ONE:
                            used, earned = 1, earned - 1.0
                        credit[native] = earned
            pair = counts.get(stack_id)
            if pair is None:
                counts[stack_id] = [1, used]
            else:
                pair[0] += 1
                pair[1] += used
        window.samples += 1


class OutsideWatch:
    """Whether the supervisor's out-of-process sampler still samples this process: named by
    the environment (inherited by forked and exec'd children), until the file
    ``OUTSIDE_STOPPED_VAR`` names exists; once it has, for good."""

    def __init__(self, environ: Mapping[str, str] = os.environ) -> None:
        self.engine = environ.get(OUTSIDE_SAMPLER_VAR, "")
        self.stopped_file = environ.get(OUTSIDE_STOPPED_VAR, "") if self.engine else ""
        self.stopped: str | None = None
        """Why it stopped (the supervisor's first error), once found."""

    @property
    def sampling(self) -> bool:
        return bool(self.engine) and self.stopped is None

    def check(self) -> bool:
        """True the first time the stopped file is found (never raises: a file that cannot
        be read is taken as not there yet)."""
        if self.stopped is not None or not self.stopped_file:
            return False
        try:
            with open(self.stopped_file, "rb") as f:
                reason = f.read(1000)
        except (OSError, ValueError):
            return False
        self.stopped = reason.decode("utf-8", "replace").strip() or "stopped"
        return True

    def budget(self, config: ProfilerConfig) -> float:
        """The in-process sampler's budget: all of it, or its share while py-spy samples."""
        return config.budget * IN_PROCESS_SHARE if self.sampling else config.budget

    def fixed_rate(self, config: ProfilerConfig) -> float:
        """``profiler.rate_hz``, except while py-spy samples, where it is py-spy's rate and
        this sampler keeps to its budget share: each in-process sample takes the GIL from the
        running thread at a call or back-edge, and on a busy machine that thread then waits
        there, runnable, for a core — where py-spy, which counts runnable threads, samples it.
        At 100 Hz that leaked this sampler's bias into py-spy's profile (richards:
        ``WorkTask.fn`` 4.5 % against py-spy's < 2.4 %)."""
        return 0.0 if self.sampling else config.rate_hz


class ProfilerMonitor:
    name: ClassVar[str] = "profiler"

    def __init__(self, draw: IntervalDraw | None = None) -> None:
        self.draw = draw or IntervalDraw()
        self._outside = OutsideWatch()
        self._plan = (0.0, 0.0)  # (budget, fixed rate in Hz): read by the sampler thread
        self._window_plan = self._plan  # the plan the current window is sampled under
        self._metadata: dict[str, object] = {}
        self._ctx: AgentContext | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()  # the sampler's waits end early: stop, or a new plan
        self._failure = DeferredFailure()
        self._window: Window | None = None
        self._lock = threading.Lock()  # guards the hand-over of a window at stop
        self._check_lock = threading.Lock()

    def start(self, ctx: AgentContext) -> None:
        self._ctx = ctx
        config = ctx.config.profiler
        sampler = Sampler(config)
        _allow_supervisor_to_trace()
        outside = self._outside = OutsideWatch()
        outside.check()  # a child started after py-spy gave up takes the whole budget at once
        self._plan = (outside.budget(config), outside.fixed_rate(config))
        self._metadata = {
            "budget": self._plan[0],
            "outside": outside.engine,
            "rate_hz": self._plan[1],
            "window_s": config.window_s,
            "thread_cpu_source": sampler.reader.source,
            "started": round(time.time(), 6),  # tells apart the sessions of a pid that exec'd
        }
        self._note_stopped(outside)
        ctx.session.update_metadata("profiler", self._metadata)
        self._window = Window(time.time(), time.monotonic())
        self._window_plan = self._plan
        self._start_thread(ctx, sampler)
        ctx.every(OUTSIDE_CHECK_S, self._tick, self)

    def _tick(self) -> None:
        """On the scheduler thread, once a second: a failure of the sampler thread is raised
        here (the runtime's firewall), and whether py-spy gave up is looked at (one job: no
        extra wake-up)."""
        self._failure.raise_if_failed()
        if self._outside.sampling:
            self._check_outside()

    def _check_outside(self) -> None:
        """Once py-spy gave up, take the whole budget (or the fixed rate) from now on, and say
        so in ``session.json`` (from the scheduler or the sampler thread; one at a time)."""
        if not self._check_lock.acquire(blocking=False):
            return  # the other thread is looking
        try:
            self._switch_if_stopped()
        finally:
            self._check_lock.release()

    def _switch_if_stopped(self) -> None:
        ctx, outside = self._ctx, self._outside
        if ctx is None or not outside.check():
            return
        config = ctx.config.profiler
        self._note_stopped(outside)  # its time precedes every window of the new plan
        self._plan = (outside.budget(config), outside.fixed_rate(config))
        self._wake.set()  # not after a wait of the old plan (up to seconds)
        self._metadata.update(budget=self._plan[0], rate_hz=self._plan[1])
        try:
            ctx.session.update_metadata("profiler", self._metadata)
        except StoreError as exc:  # the sampler has switched all the same
            log.debug("profiler: session.json not updated: %s", exc)

    def _note_stopped(self, outside: OutsideWatch) -> None:
        if outside.stopped is not None:
            self._metadata["outside_stopped"] = {
                "reason": outside.stopped,
                "time": time.time(),
            }

    def _start_thread(self, ctx: AgentContext, sampler: Sampler) -> None:
        self._stop = stop = threading.Event()
        self._wake = wake = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(ctx, sampler, stop, wake), name=THREAD_NAME, daemon=True
        )
        self._thread.start()

    def before_fork(self) -> None:
        self.pause()

    def after_fork_in_parent(self) -> None:
        self.resume()

    def pause(self) -> None:
        """Before ``fork()``: end the sampler thread, keeping the window."""
        self._stop.set()
        self._wake.set()  # after ``_stop``: a sampler woken by it sees it set
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(1.0)

    def resume(self) -> None:
        """In the parent after ``fork()``: sample again into the same window."""
        ctx = self._ctx
        if ctx is not None and self._thread is None and self._window is not None:
            self._start_thread(ctx, Sampler(ctx.config.profiler))

    def _run(
        self, ctx: AgentContext, sampler: Sampler, stop: threading.Event, wake: threading.Event
    ) -> None:
        config = ctx.config.profiler
        draw = self.draw
        me = threading.get_ident()
        shortest = 1.0 / config.max_rate_hz
        longest = max(1.0 / config.min_rate_hz, shortest)
        rate = self._plan[1]
        period = 1.0 / rate if rate > 0 else shortest
        due = time.monotonic() + period
        cost = 0.0
        look_at = 0.0  # when the sampler next looks whether py-spy gave up
        try:
            # deadlines, not sleeps: the wait for the GIL after each wake-up must not slow the rate
            while True:
                if wake.wait(max(due - time.monotonic(), 0.0)):
                    wake.clear()  # stopping, or py-spy gave up: sample under the new plan now
                    due = time.monotonic()  # and wait from now, not from the old plan's wait
                if stop.is_set():
                    return
                with self._lock:
                    window = self._window
                    if window is None:
                        return
                    if self._window_plan is not self._plan:  # py-spy gave up (_check_outside)
                        window = self._next_window(ctx, window, time.monotonic())
                    begin = time.perf_counter()
                    sampler.sample(window, me)
                    spent = time.perf_counter() - begin
                    window.cost_s += spent
                    now = time.monotonic()
                    if now - window.start_mono >= config.window_s:
                        self._next_window(ctx, window, now)
                    budget, rate = self._window_plan
                charged = spent + HANDOFF_ALLOWANCE_S
                cost = charged if cost == 0.0 else cost + _COST_WEIGHT * (charged - cost)
                period = 1.0 / rate if rate > 0 else min(max(cost / budget, shortest), longest)
                # behind schedule: carry on, never catch up in bursts
                due = max(due + draw.exponential(period), now)
                if now >= look_at and self._outside.sampling:
                    look_at = now + OUTSIDE_CHECK_SAMPLER_S
                    self._check_outside()  # a switch wakes this thread at once
        except Exception as exc:  # raised again on the scheduler thread by the firewall
            self._failure.capture(exc)
        finally:
            sampler.close()

    def _next_window(self, ctx: AgentContext, window: Window, now: float) -> Window:
        """Under the lock: write ``window`` (if it has samples) with the budget it was sampled
        at, and start the next one under the current plan, so that no window mixes two."""
        if window.samples:
            self._write(ctx, window.profile(now, _window_budget(self._window_plan)))
        self._window = Window(time.time(), now)
        self._window_plan = self._plan
        return self._window

    def _write(self, ctx: AgentContext, profile: Profile) -> None:
        window = CpuProfile.of(profile)
        data = window.encode_value()
        if len(data) >= EXT_THRESHOLD_BYTES:
            key = window.record_key()
            folder = ctx.session.path / c.CPU_PROFILE_DIR
            folder.mkdir(exist_ok=True)
            temporary = folder / f".{key}.json.tmp"
            temporary.write_bytes(data)
            os.replace(temporary, folder / f"{key}.json")
            window = window.summary(f"{c.CPU_PROFILE_DIR}/{key}.json")
        ctx.write_nowait(window)

    def stop(self) -> None:
        ctx, self._ctx = self._ctx, None
        self.pause()
        with self._lock:
            window, self._window = self._window, None
        if ctx is not None and window is not None and window.samples:
            self._write(ctx, window.profile(time.monotonic(), _window_budget(self._window_plan)))

    def after_fork_child(self) -> None:
        self.draw = IntervalDraw()  # the parent's generator state would give the same waits
        self._ctx = None
        self._thread = None
        self._window = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._check_lock = threading.Lock()


def _window_budget(plan: tuple[float, float]) -> float:
    """A window's ``budget`` field: 0 when a fixed rate, not a budget, set its samples."""
    budget, rate = plan
    return 0.0 if rate > 0 else budget


def _allow_supervisor_to_trace() -> None:
    """Under Yama's ``ptrace_scope`` = 1 only ancestors may trace a process; the supervisor's
    out-of-process sampler is a sibling, so name the supervisor (and its descendants) as allowed
    tracers. Only when the supervisor asked for it; a kernel without Yama refuses harmlessly."""
    supervisor = os.environ.get(PTRACER_VAR)
    if not supervisor or not supervisor.isdigit() or not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        pr_set_ptracer = 0x59616D61  # "Yama"
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(pr_set_ptracer, int(supervisor), 0, 0, 0)
    except (OSError, AttributeError):
        pass
