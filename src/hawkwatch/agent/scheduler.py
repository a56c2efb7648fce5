"""The agent's one thread for periodic work: every monitor's jobs run here, none owns a thread.

Jobs are ``(interval_s, callable, owner)``, or one-shot (``once``: work deferred from the
agent's start so that it does not delay the program); a job that raises is reported through
``on_error`` with its owner (the runtime then disables that monitor) and is not run again. The
thread is stopped before ``fork()`` and restarted after it, so no job is mid-way when the process
forks.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable

from hawkwatch._lazylog import lazy_logger

try:  # heapq's own C functions, without the rest of heapq
    from _heapq import heapify, heappop, heappush
except ImportError:  # pragma: no cover - other Pythons
    from heapq import heapify, heappop, heappush

log = lazy_logger(__name__)

JOIN_TIMEOUT_S = 1.0


class _Job:
    """One job; jobs order by due time, then by the order they were queued (``seq``)."""

    __slots__ = ("due", "interval_s", "jitter", "owner", "run", "seq")

    def __init__(  # noqa: PLR0917 - one argument per attribute, as the Struct had
        self,
        due: float,
        seq: int,
        interval_s: float | None,  # None: run once
        run: Callable[[], object],
        owner: object,
        jitter: Callable[[float], float] | None = None,
    ) -> None:
        self.due = due
        self.seq = seq
        self.interval_s = interval_s
        self.run = run
        self.owner = owner
        self.jitter = jitter

    def __lt__(self, other: _Job) -> bool:
        return (self.due, self.seq) < (other.due, other.seq)


class Scheduler:
    """Runs periodic jobs on one daemon thread, in order of due time (monotonic clock)."""

    def __init__(
        self,
        on_error: Callable[[object, BaseException], None],
        clock: Callable[[], float] = time.monotonic,
        name: str = "hawkwatch-scheduler",
    ) -> None:
        self._on_error = on_error
        self._clock = clock
        self._name = name
        self._jobs: list[_Job] = []
        self._seq = itertools.count()
        self._cond = threading.Condition(threading.Lock())
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._cancelled: set[int] = set()  # ids of owners whose in-flight job must not return

    def every(
        self,
        interval_s: float,
        run: Callable[[], object],
        owner: object,
        jitter: Callable[[float], float] | None = None,
    ) -> None:
        """Run ``run`` every ``interval_s`` seconds, first after one interval; with ``jitter``
        each wait is ``jitter(interval_s)`` instead (a sampler's random phase)."""
        with self._cond:
            self._cancelled.discard(id(owner))
            first = jitter(interval_s) if jitter else interval_s
            job = _Job(self._clock() + first, next(self._seq), interval_s, run, owner, jitter)
            heappush(self._jobs, job)
            self._cond.notify()

    def once(self, run: Callable[[], object], owner: object, delay_s: float = 0.0) -> None:
        """Run ``run`` once, ``delay_s`` from now (at once by default), on the scheduler thread."""
        with self._cond:
            self._cancelled.discard(id(owner))
            job = _Job(self._clock() + delay_s, next(self._seq), None, run, owner)
            heappush(self._jobs, job)
            self._cond.notify()

    def cancel(self, owner: object) -> None:
        """Drop every job of ``owner``."""
        with self._cond:
            self._cancelled.add(id(owner))
            self._jobs = [job for job in self._jobs if job.owner is not owner]
            heapify(self._jobs)

    def start(self) -> None:
        with self._cond:
            if self._thread is not None and self._thread.is_alive():
                return
            self._stopping = False
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    def stop(self, timeout_s: float = JOIN_TIMEOUT_S) -> bool:
        """Stop the thread, waiting up to ``timeout_s`` for a running job. True if it ended."""
        with self._cond:
            thread = self._thread
            self._stopping = True
            self._cond.notify()
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(timeout_s)
        return not thread.is_alive()

    def is_running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._stopping

    def reset_after_fork(self) -> None:
        """In a forked child: forget the parent's thread and lock (never acquire them)."""
        self._cond = threading.Condition(threading.Lock())
        self._thread = None
        self._stopping = False

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopping:
                    now = self._clock()
                    if self._jobs and self._jobs[0].due <= now:
                        job = heappop(self._jobs)
                        break
                    wait = self._jobs[0].due - now if self._jobs else None
                    self._cond.wait(wait)
                else:
                    return
            try:
                job.run()
            except Exception as exc:  # the firewall: report the owner, never die
                self._on_error(job.owner, exc)
                continue
            if job.interval_s is None:
                continue
            with self._cond:
                wait = job.jitter(job.interval_s) if job.jitter else job.interval_s
                job.due = max(job.due + wait, self._clock())
                job.seq = next(self._seq)
                if id(job.owner) not in self._cancelled:
                    heappush(self._jobs, job)
