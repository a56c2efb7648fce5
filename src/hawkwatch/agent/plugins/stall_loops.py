"""What the stall watchdog watches: asyncio loops, the Qt and Tk main loops, custom loops.

Two ways to know a loop still answers (``../shared/design/detectors.md`` §1.5):

* **ping** (asyncio, Qt): the watchdog posts a callback to the loop — ``call_soon_threadsafe``,
  ``QTimer.singleShot(0, app, ...)`` — and the loop runs it when it gets to it. One ping is in
  flight at a time; a new one goes out every ``interval`` after the last.
* **beat** (Tk, ``hawkwatch.heartbeat()``): the loop itself says it is alive. Tk cannot be
  posted to from another thread without blocking the caller until the Tk thread answers, so
  the Tk integration runs a ticker in the loop (``after(interval)``) instead.

Nothing here runs per loop iteration except the user's own ``heartbeat()`` calls (one dict
look-up and one clock read). Discovery patches two Python-level methods, once:
``asyncio.BaseEventLoop.run_forever`` (every ``asyncio.run``/``run_until_complete`` goes through
it) and ``tkinter.Misc.mainloop``; loops already running when asyncio is first seen are found by
looking for ``run_forever`` frames in the thread stacks. uvloop's loop does not derive from
``BaseEventLoop``: pass it to ``hawkwatch.watch_loop``.

``Target.poll`` is called by the watchdog thread only and answers one of: ``OK``; ``BLOCKED``
with the estimated start; ``ENDED`` with start and end of the last unresponsive spell (every
answered ping ends one; the watchdog keeps those over the threshold); ``LOST`` when the loop
stopped with a ping in flight (not a stall). The start is an estimate, the midpoint of the
window in which the loop went quiet; the fourth value, ``earliest``, is that window's beginning,
the last moment the loop was seen alive, so ``end - earliest`` is the longest it can have been.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
import weakref
from collections.abc import Callable
from types import FrameType
from typing import Any, Final

OK: Final = 0
BLOCKED: Final = 1
ENDED: Final = 2
LOST: Final = 3

Poll = tuple[int, float, float, float]
"""(state, estimated start, end, earliest possible start)."""
_perf = time.perf_counter


class Target:
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
        with contextlib.suppress(AttributeError, OSError):
            self._cpu_clock = time.pthread_getcpuclockid(self.thread_id)

    def poll(self, now: float, interval: float, sample_after: float) -> Poll:
        raise NotImplementedError

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
        self._loop_ref = weakref.ref(loop) if loop is not None else None
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
        self._thread = weakref.ref(threading.current_thread())
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


# -- discovery -------------------------------------------------------------------------------


class _AfterImport:
    """A ``sys.meta_path`` finder that runs a callback right after a named module is loaded.

    The watchdog's periodic look at ``sys.modules`` could come too late: an app that imports
    tkinter and enters ``mainloop`` at once would be in the loop before the patch. For other
    names ``find_spec`` returns None at once (one call per module actually loaded).
    """

    def __init__(self, callbacks: dict[str, Callable[[], None]]) -> None:
        self.callbacks = callbacks

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        callback = self.callbacks.get(name)
        if callback is None:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        original = getattr(loader, "exec_module", None)
        if original is None:
            return spec

        def exec_module(module: Any) -> None:
            original(module)
            with contextlib.suppress(Exception):  # the import itself must never fail for us
                callback()

        loader.exec_module = exec_module
        return spec


class Discovery:
    """Patches installed once the toolkits are imported, removed at stop."""

    def __init__(self, tk_interval: float) -> None:
        self.tk_interval = tk_interval
        self._lock = threading.Lock()
        self._hook: _AfterImport | None = None
        self._asyncio_class: Any = None
        self._asyncio_original: Any = None
        self._asyncio_wrapper: Any = None
        self._tk_class: Any = None
        self._tk_original: Any = None
        self._tk_wrapper: Any = None
        self._qt_apps: set[int] = set()

    def install_import_hook(self, *, asyncio: bool, tk: bool) -> None:
        """Patch asyncio/tkinter as soon as they are imported (and now, if they are)."""
        callbacks: dict[str, Callable[[], None]] = {}
        if asyncio:
            callbacks["asyncio.base_events"] = self.asyncio
        if tk:
            callbacks["tkinter"] = self.tk
        if callbacks:
            self._hook = _AfterImport(callbacks)
            sys.meta_path.insert(0, self._hook)
        for callback in callbacks.values():
            callback()

    # asyncio ----------------------------------------------------------------------------

    def asyncio(self) -> None:
        """Patch ``run_forever`` once ``asyncio`` is imported; adopt loops already running."""
        with self._lock:
            self._patch_asyncio()

    def _patch_asyncio(self) -> None:
        if self._asyncio_class is not None:
            return
        events = sys.modules.get("asyncio.base_events")
        if events is None or not hasattr(events, "BaseEventLoop"):
            return
        cls = events.BaseEventLoop
        original = cls.run_forever
        targets = TARGETS

        def run_forever(self: Any) -> Any:
            targets.watch_asyncio(self)
            try:
                return original(self)
            finally:
                targets.forget_asyncio(self)

        run_forever.__wrapped__ = original  # type: ignore[attr-defined]
        run_forever.__doc__ = original.__doc__
        cls.run_forever = run_forever
        self._asyncio_class, self._asyncio_original, self._asyncio_wrapper = (
            cls,
            original,
            run_forever,
        )
        for loop in _running_loops(original.__code__):
            targets.watch_asyncio(loop)

    # Tk -----------------------------------------------------------------------------------

    def tk(self) -> None:
        """Patch ``tkinter.Misc.mainloop`` once tkinter is imported: a ticker runs in the loop."""
        with self._lock:
            self._patch_tk()

    def _patch_tk(self) -> None:
        if self._tk_class is not None:
            return
        tkinter = sys.modules.get("tkinter")
        if tkinter is None or not hasattr(tkinter, "Misc"):
            return
        cls = tkinter.Misc
        original = cls.mainloop
        interval_ms = max(1, round(self.tk_interval * 1000))

        def mainloop(self: Any, n: int = 0) -> None:
            target = _start_tk_ticker(self, interval_ms)
            try:
                original(self, n)
            finally:
                if target is not None:
                    target.gone = True

        mainloop.__wrapped__ = original  # type: ignore[attr-defined]
        mainloop.__doc__ = original.__doc__
        cls.mainloop = mainloop
        self._tk_class, self._tk_original, self._tk_wrapper = cls, original, mainloop

    # Qt -----------------------------------------------------------------------------------

    def qt(self) -> None:
        """Watch the Qt application once one exists (PySide6, PyQt6 or PyQt5)."""
        for package in ("PySide6", "PyQt6", "PyQt5"):
            core = sys.modules.get(f"{package}.QtCore")
            if core is None:
                continue
            app = core.QCoreApplication.instance()
            if app is None or id(app) in self._qt_apps:
                continue
            self._qt_apps.add(id(app))
            _watch_qt(core, app)

    def remove(self) -> None:
        """Put the original methods back, unless someone replaced ours since."""
        if self._hook is not None:
            with contextlib.suppress(ValueError):
                sys.meta_path.remove(self._hook)
            self._hook = None
        if self._asyncio_class is not None and (
            self._asyncio_class.__dict__.get("run_forever") is self._asyncio_wrapper
        ):
            self._asyncio_class.run_forever = self._asyncio_original
        if (
            self._tk_class is not None
            and self._tk_class.__dict__.get("mainloop") is self._tk_wrapper
        ):
            self._tk_class.mainloop = self._tk_original
        self._asyncio_class = self._tk_class = None


def _running_loops(run_forever_code: Any) -> list[Any]:
    """Loops whose ``run_forever`` is on some thread's stack right now."""
    found = []
    for top in sys._current_frames().values():
        frame: FrameType | None = top
        depth = 0
        while frame is not None and depth < 200:
            if frame.f_code is run_forever_code:
                loop = frame.f_locals.get("self")
                if loop is not None:
                    found.append(loop)
                break
            frame = frame.f_back
            depth += 1
    return found


def _start_tk_ticker(widget: Any, interval_ms: int) -> BeatTarget | None:
    """In the Tk thread: a ``BeatTarget`` refreshed by an ``after`` timer every interval."""
    try:
        target = BeatTarget("tk", interval_ms / 1000)
        target.thread_name = threading.current_thread().name

        def tick() -> None:
            if target.gone:
                return
            target.beat()
            try:
                widget.after(interval_ms, tick)
            except Exception:  # the widget was destroyed: the loop is ending
                target.gone = True

        widget.after(interval_ms, tick)
        TARGETS.add(target)
        return target
    except Exception:
        return None


def _watch_qt(core: Any, app: Any) -> None:
    timer = core.QTimer
    try:
        app_ref = weakref.ref(app)  # never keep the application alive past the user's intent
    except TypeError:
        return

    def post(callback: Callable[[], None]) -> None:
        current = app_ref()
        if current is None:
            raise RuntimeError("the Qt application is gone")
        timer.singleShot(0, current, callback)

    def is_running() -> bool:
        current = app_ref()
        return current is not None and core.QCoreApplication.instance() is current

    target = PingTarget("qt", post, is_running)
    try:
        app.aboutToQuit.connect(target.disarm)
    except Exception:  # an old binding without the signal: pings after exec() would look stuck
        return
    TARGETS.add(target)
