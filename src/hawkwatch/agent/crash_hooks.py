"""The exception hooks, chained in front of whatever the app (or another tool) installed.

Each wrapper calls ``on_exception`` and then the hook that was there before, always; the
previous hook is looked up at call time from what was installed, never replaced. ``uninstall``
puts the previous hook back only if ours is still the one installed; otherwise our wrapper stays
in the chain as a pass-through. Only uncaught exceptions reach these hooks, so a caught
exception costs nothing.

* ``sys.excepthook``: the main thread's uncaught exception (fatal).
* ``threading.excepthook``: a thread's (not fatal: the process goes on).
* ``sys.unraisablehook``: exceptions in ``__del__``, callbacks, … (not fatal).
* asyncio: ``BaseEventLoop.call_exception_handler``, which every loop calls for an exception in
  a callback or a task whose exception was never retrieved, before dispatching to the loop's
  own handler (``loop.set_exception_handler``) or the default one. Patched when
  ``asyncio.base_events`` is imported.
* ``os._exit``: the code is written to a file before the process ends, so the exit is known.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from types import TracebackType

from hawkwatch.agent.exit_tracking import InterruptsDeferred
from hawkwatch.agent.import_hooks import AfterImport
from hawkwatch.agent.runtime import report_error

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, NoReturn, Protocol
else:
    from hawkwatch._runtime_typing import Protocol


class CrashSink(Protocol):
    def on_exception(
        self, exc: BaseException, *, source: str, fatal: bool, thread: threading.Thread | None
    ) -> None: ...

    def on_os_exit(self, code: int) -> None: ...


class CrashHooks:
    """Installs and removes the wrappers; ``active`` False turns them into pass-throughs."""

    def __init__(self, sink: CrashSink) -> None:
        self.sink = sink
        self.active = False
        self._saved: dict[str, tuple[Any, str, Any, Any]] = {}  # owner, name, previous, ours
        self._import_hook: AfterImport | None = None
        self._asyncio: tuple[type, Any, Any] | None = None

    def install(self) -> None:
        self.active = True
        self._wrap(sys, "excepthook", self._excepthook_wrapper)
        self._wrap(threading, "excepthook", self._thread_hook_wrapper)
        self._wrap(sys, "unraisablehook", self._unraisable_wrapper)
        self._wrap(os, "_exit", self._os_exit_wrapper)
        self._import_hook = AfterImport(
            {"asyncio.base_events": self._patch_asyncio},
            lambda exc: report_error("crash", "asyncio-hook", exc),
        )
        self._import_hook.install()
        self._patch_asyncio()

    def uninstall(self) -> None:
        self.active = False
        for key, (owner, name, previous, wrapper) in list(self._saved.items()):
            if getattr(owner, name, None) is wrapper:
                setattr(owner, name, previous)
                del self._saved[key]
        if self._import_hook is not None:
            self._import_hook.uninstall()
        self._import_hook = None
        if self._asyncio is not None:
            cls, previous, wrapper = self._asyncio
            if cls.__dict__.get("call_exception_handler") is wrapper:
                cls.call_exception_handler = previous  # type: ignore[attr-defined]
                self._asyncio = None

    # -- wrappers -----------------------------------------------------------------------------

    def _wrap(self, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        key = f"{owner.__name__}.{name}"
        if key in self._saved:
            return
        previous = getattr(owner, name)
        wrapper = make(previous)
        self._saved[key] = (owner, name, previous, wrapper)
        setattr(owner, name, wrapper)

    def _record(
        self, exc: BaseException | None, source: str, fatal: bool, thread: threading.Thread | None
    ) -> None:
        if not self.active or exc is None or isinstance(exc, SystemExit | KeyboardInterrupt):
            return
        try:
            self.sink.on_exception(exc, source=source, fatal=fatal, thread=thread)
        except Exception:  # the sink has its own fallback; the app's hook must still run
            return

    def _excepthook_wrapper(self, previous: Callable[..., Any]) -> Callable[..., Any]:
        def excepthook(
            kind: type[BaseException], value: BaseException, tb: TracebackType | None
        ) -> Any:
            # Ctrl-C held down must not interrupt this frame (as in exit_tracking's hook):
            # Python would print an "Error in sys.excepthook" traceback of ours
            with InterruptsDeferred():
                self._record(value, "sys.excepthook", True, threading.main_thread())
                return previous(kind, value, tb)

        return excepthook

    def _thread_hook_wrapper(self, previous: Callable[..., Any]) -> Callable[..., Any]:
        def thread_excepthook(args: Any) -> Any:
            self._record(args.exc_value, "threading.excepthook", False, args.thread)
            return previous(args)

        return thread_excepthook

    def _unraisable_wrapper(self, previous: Callable[..., Any]) -> Callable[..., Any]:
        def unraisablehook(unraisable: Any) -> Any:
            self._record(unraisable.exc_value, "sys.unraisablehook", False, None)
            return previous(unraisable)

        return unraisablehook

    def _os_exit_wrapper(self, previous: Callable[[int], NoReturn]) -> Callable[[int], NoReturn]:
        def _exit(status: int) -> NoReturn:
            if self.active:
                try:
                    self.sink.on_os_exit(status)
                except Exception:  # leaving must never fail because of us
                    pass
            previous(status)

        return _exit

    def _patch_asyncio(self) -> None:
        events = sys.modules.get("asyncio.base_events")
        cls = getattr(events, "BaseEventLoop", None)
        if cls is None or self._asyncio is not None:
            return
        previous = cls.call_exception_handler
        hooks = self

        def call_exception_handler(loop: Any, context: dict[str, Any]) -> Any:
            exc = context.get("exception") if isinstance(context, dict) else None
            if isinstance(exc, BaseException):
                hooks._record(exc, "asyncio", False, threading.current_thread())
            return previous(loop, context)

        call_exception_handler.__wrapped__ = previous  # type: ignore[attr-defined]
        cls.call_exception_handler = call_exception_handler
        self._asyncio = (cls, previous, call_exception_handler)
