"""What the stall watchdog watches: asyncio loops, the Qt and Tk main loops, custom loops.

Two ways to know a loop still answers (``../shared/design/detectors.md`` §1.5):

* **ping** (asyncio, Qt): the watchdog posts a callback to the loop — ``call_soon_threadsafe``,
  ``QTimer.singleShot(0, app, ...)`` — and the loop runs it when it gets to it. One ping is in
  flight at a time; a new one goes out every ``interval`` after the last.
* **beat** (Tk, ``hawkwatch.heartbeat()``): the loop itself says it is alive. Tk cannot be
  posted to from another thread without blocking the caller until the Tk thread answers, so
  the Tk integration runs a ticker in the loop (``after(interval)``) instead.

Nothing here runs per loop iteration except the user's own ``heartbeat()`` calls (one
thread-local look-up and one clock read). How loops are found: ``stall_discovery``.

``Target.poll`` is called by the watchdog thread only and answers one of: ``OK``; ``BLOCKED``
with the estimated start; ``ENDED`` with start and end of the last unresponsive spell (every
answered ping ends one; the watchdog keeps those over the threshold); ``LOST`` when the loop
stopped with a ping in flight (not a stall). The start is an estimate, the midpoint of the
window in which the loop went quiet; the fourth value, ``earliest``, is that window's beginning,
the last moment the loop was seen alive, so ``end - earliest`` is the longest it can have been.
"""

from __future__ import annotations

import _weakref  # weakref.ref is _weakref.ref: no need to import weakref
import abc
import threading
import time
from collections.abc import Callable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, Final

OK: Final = 0
BLOCKED: Final = 1
ENDED: Final = 2
LOST: Final = 3

Poll = tuple[int, float, float, float]
"""(state, estimated start, end, earliest possible start)."""
_perf = time.perf_counter


class Target(abc.ABC):
    """One watched loop. ``thread_id`` is 0 until the loop has answered once."""

    kind: str = "loop"

    def __init__(self) -> None:
        self.thread_id = 0
        self.thread_name = ""
        self.gone = False
        self._cpu_clock: int | None = None

    def cpu_time(self) -> float | None:
        """CPU seconds the loop's thread has used (Linux, macOS), None when unknown."""
        if self._cpu_clock is None:
            return None
        try:
            return time.clock_gettime(self._cpu_clock)
        except OSError:  # the thread ended
            return None

    def _learn_thread(self) -> None:
        """On the loop's own thread (asking for another thread's clock could touch a dead one)."""
        self.thread_id = threading.get_ident()
        self.thread_name = threading.current_thread().name
        try:
            self._cpu_clock = time.pthread_getcpuclockid(self.thread_id)
        except (AttributeError, OSError):
            pass

    @abc.abstractmethod
    def poll(self, now: float, interval: float, sample_after: float) -> Poll:
        """One watchdog check: whether the loop is fine, waiting, stalled or just recovered."""

    def asyncio_loop(self) -> Any:
        return None

    def describe(self) -> str:
        return self.kind


class PingTarget(Target):
    """A loop the watchdog posts pings to; armed once a ping has been answered."""

    def __init__(
        self,
        kind: str,
        post: Callable[[Callable[[], None]], None],
        is_running: Callable[[], bool],
        loop: Any = None,
    ) -> None:
        super().__init__()
        self.kind = kind
        self._post = post
        self._is_running = is_running
        self._loop_ref = _weakref.ref(loop) if loop is not None else None
        self.sent = 0.0
        self.answered = 0.0
        self.block_start = 0.0
        self.last_seen = 0.0
        self.outstanding = False
        self.armed = False

    def _answer(self) -> None:  # runs on the loop's thread
        self.answered = _perf()
        if not self.thread_id:
            self._learn_thread()

    def asyncio_loop(self) -> Any:
        return self._loop_ref() if self._loop_ref is not None else None

    def disarm(self) -> None:
        """The loop is about to stop (Qt ``aboutToQuit``): a ping in flight is not a stall."""
        self.armed = False
        self.outstanding = False

    def poll(self, now: float, interval: float, sample_after: float) -> Poll:
        result: Poll = (OK, 0.0, 0.0, 0.0)
        if self.outstanding:
            if self.answered < self.sent:
                return self._waiting(now, sample_after)
            self.outstanding = False
            if self.armed:
                # A prompt answer means the loop was free when pinged, even if the ping went out
                # late (the watchdog itself waited for the GIL): no spell before it counts.
                prompt = self.answered - self.sent < sample_after
                earliest = self.sent if prompt else self.last_seen
                result = (ENDED, self.block_start, self.answered, earliest)
            self.armed = True
        # Three quarters: the watchdog's own wake-ups jitter around the interval.
        if now - self.sent >= interval * 0.75 and self._running():
            # The loop went quiet somewhere between its last answer and now: the midpoint of
            # the last interval is the estimate (a late check widens the window, not the guess).
            self.block_start = (max(self.answered, now - interval) + now) / 2
            self.last_seen = self.answered if self.answered else now - interval
            self.sent = now
            self.outstanding = True
            try:
                self._post(self._answer)
            except Exception:  # closed loop, deleted QApplication: stop watching it
                self.outstanding = False
                self.gone = True
        return result

    def _waiting(self, now: float, sample_after: float) -> Poll:
        if not self._running():
            self.outstanding = False
            return LOST, 0.0, 0.0, 0.0
        if self.armed and now - self.sent >= sample_after:
            return BLOCKED, self.block_start, 0.0, self.last_seen
        return OK, 0.0, 0.0, 0.0

    def _running(self) -> bool:
        try:
            return self._is_running()
        except Exception:
            self.gone = True
            return False


class BeatTarget(Target):
    """A loop that beats by itself: every ``cadence`` seconds (Tk ticker) or when it likes (0)."""

    def __init__(self, kind: str, cadence: float = 0.0) -> None:
        super().__init__()
        self.kind = kind
        self.cadence = cadence
        self.thread_id = threading.get_ident()
        self.thread_name = threading.current_thread().name
        self._thread = _weakref.ref(threading.current_thread())
        self.last_beat = _perf()
        self._seen = self.last_beat
        self._blocked = False

    def beat(self) -> None:
        self.last_beat = _perf()

    def thread_alive(self) -> bool:
        """Thread ids are reused: ask the thread object, not the id."""
        thread = self._thread()
        return thread is not None and thread.is_alive()

    def poll(self, now: float, interval: float, sample_after: float) -> Poll:
        beat = self.last_beat
        if beat != self._seen:
            previous, self._seen = self._seen, beat
            self._blocked = False
            # The loop stopped somewhere in the cadence after its previous beat.
            return ENDED, previous + self.cadence / 2, beat, previous
        if now - beat >= self.cadence + sample_after:
            if not self.thread_alive():  # a loop's thread that returned is not stalled
                self.gone = True
                return LOST, 0.0, 0.0, 0.0
            self._blocked = True
            return BLOCKED, beat + self.cadence / 2, 0.0, beat
        return OK, 0.0, 0.0, 0.0


class Targets:
    """Every watched loop of the process, shared by the watchdog and the public functions."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: list[Target] = []
        self._asyncio_loops: dict[int, PingTarget] = {}
        self.changed = 0
        self.wake = threading.Event()
        """Set when a target is added, so that an idle watchdog looks at it at once."""

    def add(self, target: Target) -> None:
        with self.lock:
            self.items.append(target)
            self.changed += 1
        self.wake.set()

    def snapshot(self) -> list[Target]:
        with self.lock:
            self.items = [t for t in self.items if not t.gone]
            return list(self.items)

    def watch_asyncio(self, loop: Any) -> PingTarget | None:
        """Watch an asyncio loop (once per loop); returns its target."""
        with self.lock:
            known = self._asyncio_loops.get(id(loop))
            if known is not None and not known.gone and known.asyncio_loop() is loop:
                return known
        try:
            post = loop.call_soon_threadsafe
            is_running = loop.is_running
            is_closed = loop.is_closed
        except AttributeError:
            return None
        target = PingTarget("asyncio", post, lambda: is_running() and not is_closed(), loop)
        with self.lock:
            self._asyncio_loops[id(loop)] = target
        self.add(target)
        return target

    def forget_asyncio(self, loop: Any) -> None:
        with self.lock:
            target = self._asyncio_loops.pop(id(loop), None)
        if target is not None:
            target.gone = True

    def drop_dead_threads(self) -> None:
        """Forget beating targets whose thread ended (a custom loop's thread that returned)."""
        with self.lock:
            for target in self.items:
                if isinstance(target, BeatTarget) and not target.thread_alive():
                    target.gone = True

    def clear(self) -> None:
        """After fork: the loops and threads belong to the parent."""
        self.lock = threading.Lock()
        self.items = []
        self._asyncio_loops = {}
        self.wake = threading.Event()
        global _local
        _local = threading.local()


TARGETS = Targets()
_local = threading.local()


def heartbeat() -> None:
    """Say that this thread's custom loop is alive; call it once per iteration.

    The calling thread is then watched for stalls: no call for ``stall.threshold_s`` is one (so
    a loop that waits for work should wait with a timeout and beat after it). Costs a dict
    look-up and a clock read; never raises.
    """
    target = getattr(_local, "beat", None)
    if target is None:
        target = _local.beat = BeatTarget("heartbeat")
        TARGETS.add(target)
    target.last_beat = _perf()


def watch_loop(loop: Any) -> None:
    """Watch an asyncio-compatible event loop that automatic discovery cannot see (uvloop)."""
    TARGETS.watch_asyncio(loop)
