"""How the stall monitor finds the loops to watch, without costing a loop iteration anything.

Two Python-level methods are patched, once, as soon as their module is imported (``import_hooks``
runs a callback right after the import, so an app that imports tkinter
and enters ``mainloop`` at once is not missed): ``asyncio.BaseEventLoop.run_forever`` (every
``asyncio.run``/``run_until_complete`` goes through it) and ``tkinter.Misc.mainloop`` (which
then runs a ticker in the Tk loop). Loops already running when asyncio is first seen are found
by looking for ``run_forever`` frames in the thread stacks. uvloop's loop does not derive from
``BaseEventLoop``: pass it to ``hawkwatch.watch_loop``. A Qt application is watched once
``QCoreApplication.instance()`` exists (checked by the watchdog twice a second).
"""

from __future__ import annotations

import _weakref  # weakref.ref is _weakref.ref: no need to import weakref
import sys
import threading
from collections.abc import Callable
from types import FrameType

from hawkwatch.agent.import_hooks import AfterImport
from hawkwatch.agent.plugins.stall_loops import TARGETS, BeatTarget, PingTarget
from hawkwatch.agent.runtime import report_error

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any


class Discovery:
    """Patches installed once the toolkits are imported, removed at stop."""

    def __init__(self, tk_interval: float) -> None:
        self.tk_interval = tk_interval
        self._lock = threading.Lock()
        self._hook: AfterImport | None = None
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
            self._hook = AfterImport(callbacks, lambda exc: report_error("stall", "discovery", exc))
            self._hook.install()
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
            self._hook.uninstall()
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
    except Exception as exc:  # this Tk loop goes unwatched; the app carries on
        report_error("stall", "tk", exc)
        return None


def _watch_qt(core: Any, app: Any) -> None:
    timer = core.QTimer
    try:
        app_ref = _weakref.ref(app)  # never keep the application alive past the user's intent
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
