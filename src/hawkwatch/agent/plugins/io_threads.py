"""Which threads run an event loop, for the I/O canary's loop-thread rule.

A thread is a loop thread while it runs an asyncio loop (asked of asyncio itself at each op,
once asyncio is imported: one C call), while it is the thread of a loop the stall monitor
watches (Tk's ``mainloop``, Qt, ``heartbeat()`` loops: ``stall_loops.TARGETS``), when it is the
main thread of a program with a Qt application or a Tk root, and once the app marks it with
``hawkwatch.mark_loop_thread()``. Everything but asyncio is gathered by ``refresh`` on the
scheduler thread into one frozenset, so the per-op check is a set look-up.
"""

from __future__ import annotations

import _weakref  # weakref.ref is _weakref.ref: no need to import weakref
import sys
import threading

from hawkwatch.agent.plugins.stall_loops import TARGETS

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final

_modules: Final = sys.modules
_get_ident: Final = threading.get_ident
_marked: dict[int, _weakref.ref[threading.Thread]] = {}
#: Loop threads other than asyncio's (read by the hooks at each op).
loop_ids: frozenset[int] = frozenset()
_QT_PACKAGES: Final = ("PySide6", "PyQt6", "PyQt5")


def mark_loop_thread(thread: threading.Thread | None = None) -> None:
    """Treat ``thread`` (default: the calling one) as an event loop's until it ends.

    File I/O on it is then held to the loop-thread rule: no single read or write over 13 ms,
    no continual I/O over 500 ms. For loops hawkwatch cannot find by itself (a custom
    ``select`` loop, a game loop). Works before ``start``; never raises.
    """
    global loop_ids
    try:
        target = threading.current_thread() if thread is None else thread
        ident = target.ident
        if ident is None:
            return
        _marked[ident] = _weakref.ref(target)
        loop_ids = loop_ids | {ident}
    except Exception:  # a public call never raises into the app
        return


def on_loop_thread() -> bool:
    """Whether the calling thread is a loop thread right now (called per op: keep it cheap)."""
    events = _modules.get("asyncio.events")
    if events is not None and events._get_running_loop() is not None:
        return True
    return bool(loop_ids) and _get_ident() in loop_ids


def refresh() -> None:
    """Gather the loop threads known by other means than asyncio (scheduler thread)."""
    global loop_ids
    found: set[int] = set()
    for ident, ref in list(_marked.items()):
        thread = ref()
        if thread is None or not thread.is_alive():
            _marked.pop(ident, None)
        else:
            found.add(ident)
    for target in TARGETS.snapshot():
        if target.thread_id and target.kind != "asyncio":
            found.add(target.thread_id)
    if _gui_in_main_thread():
        main = threading.main_thread().ident
        if main is not None:
            found.add(main)
    loop_ids = frozenset(found)


def _gui_in_main_thread() -> bool:
    """A Qt application exists, or tkinter has its default root (both live in the main thread)."""
    tkinter = _modules.get("tkinter")
    if tkinter is not None and getattr(tkinter, "_default_root", None) is not None:
        return True
    for package in _QT_PACKAGES:
        core = _modules.get(f"{package}.QtCore")
        if core is not None:
            try:
                if core.QCoreApplication.instance() is not None:
                    return True
            except Exception:  # a half-imported binding
                continue
    return False


def forget_after_fork() -> None:
    """In a forked child only the calling thread survives; keep it if it was marked."""
    global loop_ids
    me = _get_ident()
    for ident in list(_marked):
        if ident != me:
            _marked.pop(ident, None)
    loop_ids = frozenset(_marked)
