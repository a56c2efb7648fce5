"""How this process is ending: the exit code, as far as the process itself can know it.

CPython tells ``atexit`` handlers nothing about the exit code, so the agent watches the ways a
program normally chooses one: ``sys.exit(code)`` called on the main thread, an uncaught
exception (exit code 1; ``KeyboardInterrupt`` ends the process with SIGINT, 130 in a shell), and
the main module running to its end (exit code 0, reason ``normal``): the main module's frame is
kept, and at exit its last instruction tells a return from an exception. A program that raises
``SystemExit`` itself or calls ``os._exit`` is not seen; under ``hawkwatch run`` the supervisor
records the real exit status in any case.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from types import FrameType, TracebackType

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import signal
    from typing import Any, NoReturn
else:
    # signal's C core: the same calls and handlers, with plain ints for signals and SIG_DFL;
    # ``signal`` itself builds three enums at import (~3 M instructions at every start).
    import _signal as signal


class ExitInfo:
    """What the process knows about its own exit."""

    __slots__ = ("exception", "exit_code", "reason", "signal")

    def __init__(self) -> None:
        self.exit_code: int | None = None
        self.signal: int | None = None
        # normal, sys.exit, uncaught-exception, keyboard-interrupt, unknown
        self.reason = "unknown"
        self.exception: str | None = None


class ExitTracker:
    """Wraps ``sys.exit`` and chains ``sys.excepthook``; ``uninstall`` restores untouched ones."""

    def __init__(self) -> None:
        self.info = ExitInfo()
        self._original_exit: Callable[..., NoReturn] | None = None
        self._original_hook: Callable[..., Any] | None = None
        self._exit_wrapper: Callable[..., NoReturn] | None = None
        self._hook_wrapper: Callable[..., Any] | None = None
        self._main_frame: FrameType | None = None

    def watch_main(self, frame: FrameType) -> None:
        """The main module's frame (``hawkwatch run``'s bootstrap sees it start)."""
        self._main_frame = frame

    def final_info(self) -> ExitInfo:
        """At exit: what was seen, or ``normal`` with code 0 when the main module ran to its end."""
        info = self.info
        if info.reason == "unknown" and _returned(self._main_frame):
            info.exit_code, info.reason = 0, "normal"
        return info

    def install(self) -> None:
        if self._main_frame is None:
            self._main_frame = _main_module_frame()  # hawkwatch.start() called from the program
        if self._original_exit is not None:
            return
        original_exit = sys.exit
        original_hook = sys.excepthook
        info = self.info

        def exit(status: object = None, /) -> NoReturn:
            if threading.current_thread() is threading.main_thread():
                info.exit_code = _exit_code_of(status)
                info.reason = "sys.exit"
            original_exit(status)  # type: ignore[arg-type]

        def excepthook(
            kind: type[BaseException], value: BaseException, tb: TracebackType | None
        ) -> Any:
            # Ctrl-C held down must not interrupt this frame: Python would print it as an
            # "Error in sys.excepthook" traceback of ours. The program is ending anyway.
            with InterruptsDeferred():
                if issubclass(kind, KeyboardInterrupt):
                    info.exit_code, info.signal = 128 + signal.SIGINT, int(signal.SIGINT)
                    info.reason = "keyboard-interrupt"
                else:
                    info.exit_code, info.reason = 1, "uncaught-exception"
                info.exception = f"{kind.__name__}: {value}"
                return original_hook(kind, value, tb)

        self._original_exit, self._original_hook = original_exit, original_hook
        self._exit_wrapper, self._hook_wrapper = exit, excepthook
        sys.exit = exit
        sys.excepthook = excepthook

    def uninstall(self) -> None:
        """Put the originals back, unless someone replaced our wrappers since."""
        if self._original_exit is not None and sys.exit is self._exit_wrapper:
            sys.exit = self._original_exit
        if self._original_hook is not None and sys.excepthook is self._hook_wrapper:
            sys.excepthook = self._original_hook
        self._original_exit = self._original_hook = None


class InterruptsDeferred:
    """``SIGINT`` during the block is noted instead of raising ``KeyboardInterrupt`` in it.

    The process is exiting anyway; the interrupt's only effect would be a traceback printed as
    "Exception ignored in atexit callback". Only the main thread can set handlers: elsewhere
    this does nothing. Python's own handler is swapped for the block; an app's handler is put
    back at once, and an interrupt that arrived meanwhile is raised again for it.
    """

    def __init__(self) -> None:
        self.previous: Any = None
        self.interrupted = False

    def __enter__(self) -> InterruptsDeferred:
        # The swap is the first call made here: Python runs a pending signal's handler only at
        # a function's entry or a call's end, so past the entry an interrupt finds ours. (A
        # check before it, such as "is this the main thread?", would be a call of its own and
        # a window in which the interrupt is raised in this frame.)
        if not _SIGINT_HANDLER_FROM_PYTHON:
            return self  # one installed outside Python could not be put back
        try:
            previous = signal.signal(signal.SIGINT, self._note)
        except (ValueError, OSError):  # not the main thread
            return self
        if previous is signal.default_int_handler:
            self.previous = previous
        else:
            self._give_back(previous)
        return self

    def _note(self, signum: int, frame: FrameType | None) -> None:
        self.interrupted = True

    def _give_back(self, handler: Any) -> None:
        """The app's handler (or SIG_IGN, SIG_DFL) back, with any interrupt that came meanwhile."""
        try:
            signal.signal(signal.SIGINT, handler if handler is not None else signal.SIG_DFL)
        finally:
            if self.interrupted:
                self.interrupted = False
                signal.raise_signal(signal.SIGINT)

    def __exit__(self, *exc_info: object) -> None:
        if self.previous is None:
            return
        try:
            signal.signal(signal.SIGINT, self.previous)
        except KeyboardInterrupt:
            # Arrived just as Python's handler went back (it runs when the call returns):
            # still inside our frame, so it is deferred like the others.
            self.interrupted = True


_SIGINT_HANDLER_FROM_PYTHON = signal.getsignal(signal.SIGINT) is not None
"""False when SIGINT's handler was installed outside Python (an embedding server's)."""


def _exit_code_of(status: object) -> int:
    """The process exit code ``sys.exit(status)`` produces (CPython's rules)."""
    if status is None:
        return 0
    if isinstance(status, bool):
        return int(status)
    if isinstance(status, int):
        return status & 0xFF
    return 1  # any other object is printed to stderr and the exit code is 1


def _main_module_frame() -> FrameType | None:
    """The frame running ``__main__``'s module code on the main thread, if it is running.

    Called on the main thread (``hawkwatch.start()`` from the program, the usual), its own stack
    (``sys._getframe``), not ``sys._current_frames()``: before 3.11.9 and 3.12.3 that holds the
    interpreter's lock on its thread list while it allocates, and a garbage collection falling
    there that frees a ``threading.local`` waits for the same lock: the process hangs
    (CPython gh-106883; seen here starting the agent again after a stop).
    """
    main = threading.main_thread()
    if threading.current_thread() is main:
        frame: FrameType | None = sys._getframe()
    else:
        ident = main.ident
        frame = sys._current_frames().get(ident) if ident is not None else None
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == "__main__":
            return frame
        frame = frame.f_back
    return None


def _returned(frame: FrameType | None) -> bool:
    """Whether ``frame`` finished by returning (its last instruction a return), not by raising.

    A finished frame keeps the offset of the last instruction it ran: the module's final return
    when it ran to its end, the call or raise that an exception left from otherwise.
    """
    if frame is None:
        return False
    code, last = frame.f_code.co_code, frame.f_lasti
    return 0 <= last < len(code) and code[last] in _return_opcodes()


def _return_opcodes() -> frozenset[int]:
    """RETURN_VALUE (and 3.12's RETURN_CONST), read off this module's own code: importing
    ``opcode`` at every exit costs ~2 M instructions, and ``compile()`` ~10 M on 3.11 (its first
    call builds the ``ast`` types)."""
    none = (lambda: None).__code__.co_code  # as a module ends: RETURN_VALUE, 3.12+ RETURN_CONST
    value = (lambda x: x).__code__.co_code  # ends with RETURN_VALUE
    return frozenset((none[-2], value[-2]))
