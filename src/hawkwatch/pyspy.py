"""py-spy as hawkwatch's out-of-process sampler: run it, read its raw output into ``Profile``\\ s.

Why from outside: a sampler thread inside the process reads ``sys._current_frames()`` only when
the running thread lets go of the GIL — at calls and loop back-edges — so a caller's own time is
charged to the callee it enters next (pyperformance's ``raytrace``: 28.9 % in ``Vector.__init__``
against 6.6 % by py-spy). py-spy reads the interpreter's frames from another process with
``process_vm_readv`` and knows every CPython layout, and its timer draws exponential waits (no
aliasing). ``hawkwatch run`` is the program's parent, so it may read the program's memory under
the default ptrace rules without root (``profiler._allow_supervisor_to_trace`` covers Yama's
``ptrace_scope`` = 1, where only ancestors may).

``Recorder`` runs ``py-spy record --pid … --format raw --duration W`` back to back on a thread of
the supervisor, one window per run (``W`` = ``profiler.window_s``, at most 10 s), each output a
``Profile`` per process with ``sampler = "py-spy"`` and cpu counts only (py-spy leaves idle
threads out). While the program has children, py-spy runs with ``--subprocesses``, which
follows forked and spawned children; without children it runs without, as that option costs
about 1 % of a core all the time (a py-spy thread scanning every process on the machine for
new children, whatever the rate). The recorder looks for children every ``CPU_POLLS`` polls
(the kernel's ``/proc/PID/task/TID/children`` lists, not a scan) and ends a window without the
option as soon as one appears, so the next one follows it. When the program execs (its
``/proc/PID/cmdline`` changes) the window ends at once too and the next one attaches to the new
interpreter. Each window's rate is what py-spy's share of the budget pays for at the cost a
sample had in the window before (``Recorder.next_rate``). py-spy's own output goes to a file:
the program's output and exit code are never touched. When py-spy cannot sample (no ptrace
rights, or it keeps failing) the recorder gives up and creates ``stopped_file``, which tells
the program's in-process sampler to take the whole budget (``runenv.OUTSIDE_STOPPED_VAR``).
Pure parsing lives here too (``parse_raw``), so tests and benchmarks read py-spy's files the
same way.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from hawkwatch.model.profile import PY_SPY, Profile, thread_frame
from hawkwatch.model.stack import PyFrame, StackTable

MAX_WINDOW_S: Final = 10.0
"""A window is written at least this often, so a program killed early still has a profile."""
COST_PER_SAMPLE_S: Final = 600e-6
"""What one blocking py-spy sample (pause every thread, read, resume) is taken to cost the program
in *wall* time until a window has measured it (``Recorder``): ``benchmarks/pyspy_pause.py`` put the
main thread's stopped time per sample at 0.5–0.58 ms on pyperformance's ``raytrace``, ``richards``,
``go`` and ``json_dumps`` under ``hawkwatch run`` (2-vCPU VM). It grows with the stack's depth
(~10 µs a frame) and the process's threads (~95 µs each, idle ones too): 0.37 ms for 5 frames
and three threads, 1.4 ms for 100 frames, 3.5 ms beside 32 idle threads."""
PAUSE_ALLOWANCE_S: Final = 200e-6
"""Added to py-spy's own CPU time per sample to give the pause: stopping the threads and waking
them again is time the program is stopped but py-spy does not run (``pyspy_pause.py``: pauses
0.1–0.25 ms longer than py-spy's CPU per sample, from 5 to 100 frames and 3 to 35 threads)."""
STARTUP_S: Final = 0.5
"""py-spy's CPU from its start to its first reading after this long is left out of the cost per
sample: that part is its start-up (reading the interpreter's symbols), not sampling."""

AGENT_THREAD_PREFIX: Final = "hawkwatch"
AGENT_DIR: Final = str(Path(__file__).resolve().parent / "agent") + "/"
"""Stacks through the agent's own code (its start-up in the main thread) are left out too."""
CPU_POLLS: Final = 5
"""Threads' CPU is read every this many polls (0.25 s) during a window, so the readings of a
thread or process that ends before the window does are at most that old."""
EXEC_POLL_S: Final = 0.05
"""How often a window checks whether the program exec'd (it then ends, so py-spy re-attaches)."""
FAILURES_TO_GIVE_UP: Final = 3
"""py-spy runs in a row that failed before any window: it cannot attach here (no ptrace
rights, a Python it cannot read); the recorder stops trying."""
FAILURES_TO_GIVE_UP_LATER: Final = 5
"""The same after windows were recorded (py-spy dies, or the program exec'd something it cannot
read): more, as a py-spy started on a program that just exec'd fails until its interpreter is
up."""
_PROCESS = re.compile(r'^process (?P<pid>\d+):')
_THREAD = re.compile(r"^thread \((?P<tid>[^)]*)\)(?:: (?P<name>.*))?$")
_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>.*):(?P<line>\d+)\)$", re.DOTALL)


def find_pyspy() -> str | None:
    """The py-spy executable: on ``PATH``, or beside this interpreter (a venv's ``bin``)."""
    found = shutil.which("py-spy")
    if found:
        return found
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.is_file() else None


def default_rate(
    budget: float, fixed_hz: float, max_hz: float, min_hz: float, cost_s: float = COST_PER_SAMPLE_S
) -> int:
    """py-spy's rate: the fixed rate, else what the CPU budget pays for at ``cost_s`` a sample
    within the rate limits; a whole number of hertz (at least 1), the only rates py-spy accepts
    (``--rate 53.3333`` is an argument error, and the engine then never ran)."""
    if fixed_hz > 0:
        return max(1, round(fixed_hz))
    return max(1, round(min(max(budget / cost_s, min_hz), max_hz)))


def cost_per_sample(cpu_s: float, seconds: float, rate_hz: float) -> float | None:
    """What one sample cost the program, from py-spy's busy time (on a CPU or waiting for one)
    over ``seconds`` of sampling at ``rate_hz``: that per sample plus ``PAUSE_ALLOWANCE_S``.
    None without a measurement."""
    samples = seconds * rate_hz
    if samples < 1 or cpu_s <= 0:
        return None
    return cpu_s / samples + PAUSE_ALLOWANCE_S


def process_busy_seconds(pid: int) -> float:
    """Seconds every thread of ``pid`` spent on a CPU or runnable and waiting for one
    (``schedstat``'s first two fields; 0.0 when they cannot be read). For py-spy both lengthen
    the pause: on a busy machine it waits for a core while the program is stopped."""
    total = 0.0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                on_cpu, waiting = f.read().split()[:2]
            total += (int(on_cpu) + int(waiting)) / 1e9
        except (OSError, ValueError):
            continue
    return total


def parse_raw(
    text: str, root_pid: int, skip_dir: str = AGENT_DIR
) -> dict[int, dict[tuple[PyFrame, ...], int]]:
    """py-spy's ``--format raw --threads`` lines → per process id, stacks (innermost first,
    outermost a thread pseudo-frame as the in-process profiler writes it) and counts.

    Lines without a ``process PID:`` prefix belong to ``root_pid`` (py-spy adds the prefix only
    for processes other than the one it was given, or when that one is not Python). Lines that
    do not parse are skipped, and so are the agent's threads and stacks through ``skip_dir``
    (the agent's code), as the in-process sampler leaves itself out.
    """
    return _by_pid(parse_raw_threads(text, root_pid, skip_dir))


ThreadStacks = dict[tuple[int, int], dict[tuple[PyFrame, ...], int]]
"""Stacks and counts per ``(pid, native thread id)`` (thread id -1 when py-spy gave none)."""


def parse_raw_threads(text: str, root_pid: int, skip_dir: str = AGENT_DIR) -> ThreadStacks:
    """``parse_raw``, kept apart per thread (for ``cpu_weighted``)."""
    found: ThreadStacks = {}
    for line in text.splitlines():
        body, _, count_text = line.rpartition(" ")
        if not count_text.isdigit() or not body:
            continue
        parts = body.split(";")
        pid = root_pid
        while parts and (match := _PROCESS.match(parts[0])):
            pid = int(match["pid"])
            parts = parts[1:]
        if not parts:
            continue
        thread = _THREAD.match(parts[0])
        if thread is None:
            continue
        name = thread["name"] or f"thread-{thread['tid']}"
        if name.startswith(AGENT_THREAD_PREFIX):
            continue  # the agent's own threads, left out as the in-process sampler does
        frames = [thread_frame(name)]
        for text_frame in parts[1:]:
            match = _FRAME.match(text_frame)
            if match is None:
                frames.append(PyFrame(text_frame, "", 0))
            else:
                frames.append(PyFrame(match["func"], match["file"], int(match["line"])))
        if skip_dir and any(frame.file.startswith(skip_dir) for frame in frames):
            continue
        stack = tuple(reversed(frames))
        tid = int(thread["tid"]) if thread["tid"].isdigit() else -1
        per_thread = found.setdefault((pid, tid), {})
        per_thread[stack] = per_thread.get(stack, 0) + int(count_text)
    return found


def _by_pid(threads: ThreadStacks) -> dict[int, dict[tuple[PyFrame, ...], int]]:
    found: dict[int, dict[tuple[PyFrame, ...], int]] = {}
    for (pid, _), stacks in threads.items():
        per_pid = found.setdefault(pid, {})
        for stack, count in stacks.items():
            per_pid[stack] = per_pid.get(stack, 0) + count
    return found


def cpu_weighted(
    threads: ThreadStacks, cpu_s: Mapping[int, float], rate_hz: float
) -> dict[int, dict[tuple[PyFrame, ...], int]]:
    """Per process, stacks whose per-thread totals are cut to the CPU each thread really used.

    py-spy counts a thread as active when the OS says it may run, so a thread that is runnable
    but waiting for a core — or, now and then, one blocked on a lock — gets samples it did not
    spend on a CPU. Over a window the kernel's count (``cpu_s``: CPU seconds per native thread
    id, from ``schedstat``) says how many samples a thread can have earned at ``rate_hz``; a
    thread with more keeps that many, spread over its stacks in proportion (largest remainders).
    py-spy says where a thread was, the kernel how long it ran. Threads without a reading keep
    their counts."""
    weighted: ThreadStacks = {}
    for key, stacks in threads.items():
        used = cpu_s.get(key[1])
        total = sum(stacks.values())
        earned = total if used is None else min(total, round(used * rate_hz))
        weighted[key] = stacks if earned == total else scaled(stacks, earned, total)
    return _by_pid(weighted)


def scaled(
    stacks: Mapping[tuple[PyFrame, ...], int], earned: int, total: int
) -> dict[tuple[PyFrame, ...], int]:
    """``stacks`` (``total`` samples) cut to ``earned`` samples in proportion, the rounding
    going to the largest remainders, so the counts add up to ``earned`` exactly."""
    exact = {stack: count * earned / total for stack, count in stacks.items()}
    scaled = {stack: int(value) for stack, value in exact.items()}
    left = earned - sum(scaled.values())
    for stack in sorted(exact, key=lambda s: scaled[s] - exact[s])[:left]:
        scaled[stack] += 1
    return {stack: count for stack, count in scaled.items() if count}


def children_of(pid: int) -> list[int]:
    """Direct children of ``pid``, from the kernel's per-thread ``children`` lists (no scan of
    every process); psutil's scan where the kernel has no such file."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                found += [int(x) for x in f.read().split()]
        except FileNotFoundError:
            return _children_scanned(pid)
        except (OSError, ValueError):
            continue
    return found


def _children_scanned(pid: int) -> list[int]:
    try:
        import psutil

        return [child.pid for child in psutil.Process(pid).children()]
    except Exception:  # noqa: BLE001 (gone, or no permission: what can be read is enough)
        return []


def descendants(pid: int) -> list[int]:
    found: list[int] = []
    todo = children_of(pid)
    while todo and len(found) < 10_000:
        one = todo.pop()
        found.append(one)
        todo += children_of(one)
    return found


def thread_cpu_seconds(pid: int, *, children: bool = True) -> dict[int, float]:
    """CPU seconds of every thread of ``pid`` and (``children``) its descendants, by native
    thread id (``/proc/<pid>/task/<tid>/schedstat``: nanoseconds on a CPU)."""
    pids = [pid, *(descendants(pid) if children else [])]
    found: dict[int, float] = {}
    for one in pids:
        try:
            tids = os.listdir(f"/proc/{one}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{one}/task/{tid}/schedstat", "rb") as f:
                    found[int(tid)] = int(f.read().split()[0]) / 1e9
            except (OSError, ValueError, IndexError):
                continue
    return found


def window_profile(
    stacks: dict[tuple[PyFrame, ...], int], start: float, duration: float, rate_hz: float
) -> Profile:
    """One process's samples of one py-spy run as a ``Profile`` (cpu counts only)."""
    table = StackTable()
    counts: dict[int, tuple[int, int]] = {}
    for stack, count in stacks.items():
        stack_id = table.add(stack)
        wall, cpu = counts.get(stack_id, (0, 0))
        counts[stack_id] = (wall, cpu + count)
    return Profile(
        start_time=start,
        duration_s=max(duration, 1e-6),
        samples=sum(stacks.values()),
        rate_hz=rate_hz,
        table=table,
        counts=counts,
        sampler=PY_SPY,
    )


@dataclass
class Window:
    """One py-spy run: its time span, rate, and the profiles of each process it saw."""

    start: float
    end: float
    profiles: dict[int, Profile] = field(default_factory=dict)
    rate_hz: float = 0.0
    cost_s: float | None = None
    """What a sample cost, measured over this window (``cost_per_sample``)."""


@dataclass
class RecorderOptions:
    rate_hz: float = 100.0
    window_s: float = MAX_WINDOW_S
    nonblocking: bool = False
    executable: str = "py-spy"
    overrun_s: float = 30.0
    """A py-spy still running this long after its window should have ended is stopped (SIGINT,
    then SIGKILL): a py-spy stuck while attached would keep the program paused."""
    budget: float = 0.0
    """py-spy's share of ``profiler.budget``: > 0 sets each window's rate to what it pays for at
    the cost per sample the previous window measured (``rate_hz`` is the first window's); 0
    keeps ``rate_hz`` (a fixed rate)."""
    min_rate_hz: float = 1.0
    max_rate_hz: float = 100.0
    stopped_file: str = ""
    """Created (holding why) when the recorder gives up, for the program to find
    (``runenv.OUTSIDE_STOPPED_VAR``); "" for none."""


class Recorder:
    """Runs py-spy on ``pid`` and its children window after window until ``stop()``.

    Never raises into the supervisor: a py-spy that cannot attach (no ptrace rights, no
    Python) leaves ``errors``, no windows and ``gave_up`` (the first error of the failing
    run), and the in-process sampler's windows stand, at the whole budget from then on.
    """

    def __init__(self, pid: int, options: RecorderOptions) -> None:
        self.pid = pid
        self.options = options
        self.rate_hz = max(1, round(options.rate_hz))
        self.windows: list[Window] = []
        self.errors: list[str] = []
        self.gave_up: str | None = None
        self._stop = threading.Event()
        self._current: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="hawkwatch-py-spy", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """End the window in progress (py-spy writes what it has on SIGINT) and wait for it."""
        self._stop.set()
        with self._lock:
            current = self._current
        if current is not None and current.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                current.send_signal(signal.SIGINT)
        self._thread.join(timeout)
        if self._thread.is_alive() and current is not None:
            with contextlib.suppress(ProcessLookupError):
                current.kill()
            self._thread.join(timeout)

    def _command(self, output: Path, follow: bool = True) -> list[str]:
        o = self.options
        rate = str(self.rate_hz)  # py-spy takes whole hertz only
        command = [o.executable, "record", "--pid", str(self.pid), "--rate", rate,
                   "--duration", str(max(1, round(min(o.window_s, MAX_WINDOW_S)))),
                   "--format", "raw", "--threads", "--full-filenames",
                   "--output", str(output)]  # fmt: skip
        if follow:
            command.append("--subprocesses")
        if o.nonblocking:
            command.append("--nonblocking")
        return command

    def _run(self) -> None:
        try:
            self._windows()
        except Exception as exc:  # noqa: BLE001 (never into the supervisor)
            self.errors.append(f"{type(exc).__name__}: {exc}")
            self.give_up(self.errors[-1])

    def _windows(self) -> None:
        with tempfile.TemporaryDirectory(prefix="hawkwatch-py-spy-") as scratch:
            number = 0
            failing_since = 0  # index in ``errors`` of the first failure in a row
            while not self._stop.is_set() and _alive(self.pid):
                number += 1
                output = Path(scratch) / f"window-{number}.txt"
                errors, windows = len(self.errors), len(self.windows)
                self._one(output)
                if len(self.windows) > windows:
                    failing_since = len(self.errors)
                elif len(self.errors) > errors:
                    limit = FAILURES_TO_GIVE_UP_LATER if self.windows else FAILURES_TO_GIVE_UP
                    if len(self.errors) - failing_since >= limit:
                        self.give_up(self.errors[failing_since])  # py-spy cannot sample here
                        return

    def give_up(self, reason: str) -> None:
        """Stop trying for good, and tell the program (``stopped_file``; never raises)."""
        self.gave_up = reason
        self._stop.set()
        path = self.options.stopped_file
        if not path:
            return
        with contextlib.suppress(OSError):  # written whole, then named: never read half-written
            temporary = f"{path}.tmp"
            with open(temporary, "w", encoding="utf-8") as f:
                f.write(reason[:500])
            os.replace(temporary, path)

    def _one(self, output: Path) -> None:
        cpu_before = thread_cpu_seconds(self.pid)
        start = time.time()
        with self._lock:
            if self._stop.is_set():
                return
            log = output.with_suffix(".log").open("w+b")  # a file: a pipe could fill up
            follow = bool(children_of(self.pid))
            try:
                self._current = child = subprocess.Popen(
                    self._command(output, follow),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    start_new_session=True,  # the terminal's Ctrl-C is the program's
                    preexec_fn=_die_with_parent(),  # noqa: PLW1509 (one system call, no locks)
                )
            except BaseException:
                log.close()  # no py-spy (not found, not executable): the recorder gives up
                raise
        spent = Spent(child.pid, time.monotonic())
        cpu_last = self._watch(child, follow, spent, dict(cpu_before))
        rate = self.rate_hz
        end = time.time()
        with log:
            log.seek(0)
            err = log.read()
        with self._lock:
            self._current = None
        try:
            text = output.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            if _alive(self.pid):
                self.errors.append(error_line(err) or f"py-spy exit {child.returncode}")
                time.sleep(0.2)
            return
        cpu_last.update(thread_cpu_seconds(self.pid))
        used = {t: s - cpu_before.get(t, 0.0) for t, s in cpu_last.items()}
        per_pid = cpu_weighted(parse_raw_threads(text, self.pid), used, rate)
        window = Window(start, end, rate_hz=rate, cost_s=spent.cost_per_sample(rate))
        for pid, stacks in per_pid.items():
            window.profiles[pid] = window_profile(stacks, start, end - start, rate)
        self.windows.append(window)
        self.rate_hz = self.next_rate(window.cost_s)

    def _watch(
        self,
        child: subprocess.Popen[bytes],
        follow: bool,
        spent: Spent,
        cpu_last: dict[int, float],
    ) -> dict[int, float]:
        """Wait for py-spy's window to end; end it early when the program execs or (``follow``
        off) gets a child; stop a stuck py-spy. Returns the threads' last CPU readings."""
        program = _program(self.pid)
        polls = 0
        ended = False
        deadline = time.monotonic() + min(self.options.window_s, MAX_WINDOW_S)
        deadline += self.options.overrun_s
        while True:
            try:
                child.wait(EXEC_POLL_S)
                return cpu_last
            except subprocess.TimeoutExpired:
                polls += 1
                # children every CPU_POLLS polls: one file a thread, for a program of many
                # threads more than the cmdline's one
                forked = not follow and polls % CPU_POLLS == 0 and bool(children_of(self.pid))
                if not ended and (forked or _program(self.pid) != program):
                    ended = True  # once: a second SIGINT could stop py-spy before it writes
                    with contextlib.suppress(ProcessLookupError):
                        child.send_signal(signal.SIGINT)  # the next window follows them
                late = time.monotonic() - deadline
                if late > 0:  # stuck: free the program (the kernel detaches a killed tracer)
                    with contextlib.suppress(ProcessLookupError):
                        child.send_signal(signal.SIGINT if late < 2.0 else signal.SIGKILL)
                spent.read()
                if polls % CPU_POLLS == 0:  # the last readings stand for threads that end
                    cpu_last.update(thread_cpu_seconds(self.pid))

    def next_rate(self, cost_s: float | None) -> int:
        """The next window's rate: what py-spy's budget pays for at the cost a sample had in
        the last window (deeper stacks and more threads make each pause longer); unchanged
        with a fixed rate or without a measurement."""
        o = self.options
        if o.budget <= 0 or cost_s is None:
            return self.rate_hz
        return default_rate(o.budget, 0.0, o.max_rate_hz, o.min_rate_hz, cost_s)


class Spent:
    """py-spy's time on and waiting for a CPU while it samples, read at the recorder's polls:
    from the first reading ``STARTUP_S`` after its start (its start-up left out) to the last
    one."""

    def __init__(self, pid: int, started: float, clock: Callable[[], float] = time.monotonic,
                 cpu: Callable[[int], float] = process_busy_seconds) -> None:  # fmt: skip
        self.pid = pid
        self.started = started
        self.clock = clock
        self.cpu = cpu
        self.first: tuple[float, float] | None = None
        self.last: tuple[float, float] | None = None

    def read(self) -> None:
        now = self.clock()
        if now - self.started < STARTUP_S:
            return
        cpu = self.cpu(self.pid)
        if cpu <= 0:  # gone: the last reading stands
            return
        if self.first is None:
            self.first = (now, cpu)
        else:
            self.last = (now, cpu)

    def cost_per_sample(self, rate_hz: float) -> float | None:
        if self.first is None or self.last is None:
            return None
        return cost_per_sample(self.last[1] - self.first[1], self.last[0] - self.first[0],
                               rate_hz)  # fmt: skip


def error_line(stderr: bytes) -> str:
    """py-spy's error in one line: its ``Error:`` line (or the last line) and the innermost
    cause, without the stack backtrace it prints after them."""
    lines = [line.strip() for line in stderr.decode(errors="replace").splitlines()]
    lines = [line for line in lines if line]
    if "Stack backtrace:" in lines:
        lines = lines[: lines.index("Stack backtrace:")]
    if not lines:
        return ""
    if "Caused by:" not in lines:
        return lines[-1]
    at = lines.index("Caused by:")
    errors = [line for line in lines[:at] if line.startswith("Error")]
    main = errors[0] if errors else lines[at - 1] if at else ""
    cause = lines[-1].split(": ", 1)[-1] if at < len(lines) - 1 else ""
    return f"{main} ({cause})" if main and cause else main or cause


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the kernel SIGKILL py-spy when the supervisor dies.

    Without it a SIGKILLed supervisor leaves py-spy running out its window (up to 10 s) pausing
    the program at every sample, or for good if it is stuck while attached: no one is left to
    apply ``overrun_s``. ``PR_SET_PDEATHSIG`` fires when the *thread* that forked the child
    ends; the recorder's thread outlives each py-spy it starts (it waits for it). The function
    is resolved here, before the fork, so the child only makes one system call (a
    ``preexec_fn`` runs between fork and exec, where taking a lock could deadlock). None off
    Linux or when libc has no ``prctl``."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    parent = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the supervisor died before the call: nothing would fire
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


_PR_SET_PDEATHSIG: Final = 1


def _program(pid: int) -> bytes:
    """What ``pid`` runs (its command line): changes when it execs."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rpartition(b")")[2].split()[:1]
    except OSError:
        return False
    return state != [b"Z"]


def merged(windows: Iterable[Window]) -> dict[int, list[Profile]]:
    """Profiles by process id, oldest first."""
    by_pid: dict[int, list[Profile]] = {}
    for window in windows:
        for pid, profile in window.profiles.items():
            by_pid.setdefault(pid, []).append(profile)
    return by_pid
