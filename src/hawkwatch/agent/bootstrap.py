"""Starting the agent inside a program launched by ``hawkwatch run``.

``hawkwatch run`` puts ``_bootstrap/`` first on ``PYTHONPATH``; its ``sitecustomize`` calls
``start_from_environment`` while the interpreter is still starting, before any user code. Options
arrive as ``HAWKWATCH_*`` variables and are inherited by child Python processes (so children of
``multiprocessing``'s spawn and forkserver methods are monitored too). The variables meant for the
launched process alone (``_HAWKWATCH_SUPERVISED``, ``_HAWKWATCH_SESSION_FILE``) are removed from
the environment once read, so grandchildren do not act as the supervised process.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from types import FrameType

from hawkwatch.agent import api
from hawkwatch.runenv import (
    MAIN_STARTED,
    OUTSIDE_SAMPLER_VAR,
    SESSION_FILE_VAR,
    SUPERVISED_TIDY_DELAY_S,
    SUPERVISED_VAR,
    TIDY_VAR,
    WATCHING_MAIN,
)


def start_from_environment() -> None:
    """Start the agent from ``HAWKWATCH_*`` variables; announce the session to the supervisor."""
    interpreter_ready = time.time()
    if os.environ.get(OUTSIDE_SAMPLER_VAR):  # py-spy stops this process: no short writes lost
        _keep_writes_whole()
    is_supervised = os.environ.pop(SUPERVISED_VAR, None) == "1"
    session_file = os.environ.pop(SESSION_FILE_VAR, None)
    supervisor_tidies = os.environ.pop(TIDY_VAR, None) == "1" and is_supervised
    started = api.start_agent(
        None, None, {}, interpreter_ready=interpreter_ready, is_supervised=is_supervised
    )
    agent = api.current_agent()
    if not started or agent is None or agent.session is None:
        return
    if supervisor_tidies and session_file:
        # Old sessions: removed by the supervisor after the program ends, unless it runs long
        # enough for the scheduler thread to do it (a short program does not pay for it).
        agent.retention_delay_s = SUPERVISED_TIDY_DELAY_S
        agent.supervisor_tidies = True
    _freeze_start_up_objects()
    # Someone else profiling this thread already: main start stays "not captured".
    watching = sys.getprofile() is None
    if session_file:
        notes = f"{agent.session.folder}\n" + (f"{WATCHING_MAIN}\n" if watching else "")
        with open(session_file, "w", encoding="utf-8") as f:  # no pathlib at the start
            f.write(notes)
    if watching:
        _watch_for_main_start(session_file)
    else:
        agent.schedule_retention()  # main start cannot be seen: tidy now (or soon)


def _keep_writes_whole() -> None:
    try:
        from hawkwatch.agent.whole_writes import make_writes_whole

        make_writes_whole()
    except Exception:  # never into the interpreter's start-up; the streams stay as they were
        pass


def _watch_for_main_start(session_file: str | None) -> None:
    """Note the moment the main script, module or ``-c`` command starts running.

    A profile hook on this thread sees the first frame of ``__main__`` and removes itself, so
    it costs only the few calls between here and the program's first line. (An audit hook
    would be simpler, but can never be removed: it would tax ``id()``, ``sys._getframe()`` and
    every other audited call for the life of the process.)
    """

    def on_call(frame: FrameType, event: str, arg: object) -> None:
        if event != "call" or frame.f_code.co_name != "<module>":
            return
        if frame.f_globals.get("__name__") != "__main__":
            return
        sys.setprofile(None)
        if session_file:  # tell the supervisor the program's own code ran (see never_started)
            _note(session_file, MAIN_STARTED)
        agent = api.current_agent()
        if agent is not None:
            try:
                agent.exit_tracker.watch_main(frame)  # to tell a normal end at exit
                agent.note_main_started(time.time())
                agent.schedule_retention()  # the program runs: now old sessions may go
            except Exception as exc:  # never into the interpreter's start-up
                agent.record_error("launch", "run", f"{type(exc).__name__}: {exc}")

    sys.setprofile(on_call)


def _note(session_file: str, line: str) -> None:
    try:
        with open(session_file, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    except OSError:
        pass  # the supervisor then keeps the session, as for any program that started


def _freeze_start_up_objects() -> None:
    """Keep the agent's objects (and the interpreter's own start-up objects) out of every
    later garbage collection.

    The agent's modules are thousands of long-lived objects (functions, classes, dicts) that a
    full collection would otherwise traverse again and again for the life of the program: a few
    percent of a CPU-bound program that collects often. ``gc.freeze()`` moves everything alive
    now into the permanent generation. Here, before any of the program's code has run, that is
    only what the interpreter's start-up and the agent created, which live as long as the
    process anyway. (``hawkwatch.start()`` called from code does not do this: it would freeze
    the program's objects too, and a cycle of them that became garbage would never be freed.)
    """
    gc.freeze()
