"""Capture the Python stacks of running threads, cheaply enough to do it 20–100 times a second.

``sys._current_frames()`` gives every thread's innermost frame; walking ``f_back`` gives the rest.
Converting a frame costs a dict lookup: the (func, file, module) part is cached per code object,
only the line number is read each time. Stacks come out innermost first (``model.stack``).

Works on CPython 3.11–3.13: ``co_qualname`` exists from 3.11, and ``f_lineno`` may be ``None``
for a frame that has not started a line yet (reported as 0).
"""

from __future__ import annotations

import os
import sys
import threading
from types import CodeType, FrameType

from hawkwatch.model.stack import PyFrame, Stack

MAX_DEPTH = 128
"""Deeper stacks keep their innermost frames; recursion rarely needs more to be recognised."""

_code_info: dict[CodeType, tuple[str, str, str] | None] = {}  # None: the agent's own code
_AGENT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "")


def frame_stack(frame: FrameType | None, max_depth: int = MAX_DEPTH) -> Stack:
    """The stack ending at ``frame``, innermost first, at most ``max_depth`` frames.

    The agent's own frames (the wrappers it puts around ``run_forever``, ``mainloop`` and
    imports, the bootstrap) are left out: they belong to no program and would show in its
    flame graphs and stalls.
    """
    frames: list[PyFrame] = []
    info = _code_info
    while frame is not None and len(frames) < max_depth:
        code = frame.f_code
        if code in info:
            cached = info[code]
        else:
            if len(info) > 50_000:  # code objects of exec'd strings must not grow this forever
                info.clear()
            cached = info[code] = None if is_agent_code(code) else _code_info_of(frame)
        if cached is not None:
            frames.append(PyFrame(cached[0], cached[1], frame.f_lineno or 0, cached[2]))
        frame = frame.f_back
    return tuple(frames)


def is_agent_code(code: CodeType) -> bool:
    """Code of the agent itself (its wrappers and hooks run on the program's threads)."""
    return code.co_filename.startswith(_AGENT_DIR)


def py_frame(frame: FrameType) -> PyFrame:
    """One interpreter frame (a thread's, or a suspended coroutine's) as a ``PyFrame``."""
    func, file, module = _code_info_of(frame)
    return PyFrame(func, file, frame.f_lineno or 0, module)


def _code_info_of(frame: FrameType) -> tuple[str, str, str]:
    code = frame.f_code
    module = frame.f_globals.get("__name__")
    return (code.co_qualname, code.co_filename, module if isinstance(module, str) else "")


def thread_stack(thread_id: int, max_depth: int = MAX_DEPTH) -> Stack:
    """Current stack of the thread whose ``threading.get_ident()`` is ``thread_id`` (or empty)."""
    return frame_stack(sys._current_frames().get(thread_id), max_depth)


def all_stacks(skip: frozenset[int] = frozenset(), max_depth: int = MAX_DEPTH) -> dict[int, Stack]:
    """Stacks of every Python thread except those in ``skip``, by ``threading.get_ident()``."""
    return {
        ident: frame_stack(frame, max_depth)
        for ident, frame in sys._current_frames().items()
        if ident not in skip
    }


def native_ids() -> dict[int, threading.Thread]:
    """Python threads by OS thread id (``threading.get_native_id``), for per-thread CPU times."""
    return {
        thread.native_id: thread for thread in threading.enumerate() if thread.native_id is not None
    }
