"""Starting the agent inside a program launched by ``hawkwatch run``.

``hawkwatch run`` puts ``_bootstrap/`` first on ``PYTHONPATH``; its ``sitecustomize`` calls
``start_from_environment`` while the interpreter is still starting, before any user code. Options
arrive as ``HAWKWATCH_*`` variables and are inherited by child Python processes (so children of
``multiprocessing``'s spawn and forkserver methods are monitored too). The variables meant for the
launched process alone (``_HAWKWATCH_SUPERVISED``, ``_HAWKWATCH_SESSION_FILE``) are removed from
the environment once read, so grandchildren do not act as the supervised process.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Final

from hawkwatch.agent import api

BOOTSTRAP_DIR: Final = Path(__file__).resolve().parent / "_bootstrap"
SUPERVISED_VAR: Final = "_HAWKWATCH_SUPERVISED"
SESSION_FILE_VAR: Final = "_HAWKWATCH_SESSION_FILE"
_MAIN_EVENTS: Final = frozenset({"cpython.run_file", "cpython.run_module", "cpython.run_command"})


def start_from_environment() -> None:
    """Start the agent from ``HAWKWATCH_*`` variables; announce the session to the supervisor."""
    interpreter_ready = time.time()
    is_supervised = os.environ.pop(SUPERVISED_VAR, None) == "1"
    session_file = os.environ.pop(SESSION_FILE_VAR, None)
    started = api.start_agent(
        None, None, {}, interpreter_ready=interpreter_ready, is_supervised=is_supervised
    )
    agent = api.current_agent()
    if not started or agent is None or agent.session is None:
        return
    if session_file:
        Path(session_file).write_text(str(agent.session.path), encoding="utf-8")
    _watch_for_main_start()


def _watch_for_main_start() -> None:
    """Note the moment CPython starts the main script, module or ``-c`` command.

    Audit hooks cannot be removed; after the first main-start event this one returns at once.
    """
    done = False

    def on_audit(event: str, args: tuple[object, ...]) -> None:
        nonlocal done
        if done or event not in _MAIN_EVENTS:
            return
        done = True
        agent = api.current_agent()
        if agent is not None:
            try:
                agent.note_main_started(time.time())
            except Exception as exc:  # never into the interpreter's start-up
                agent.record_error("launch", "run", f"{type(exc).__name__}: {exc}")

    sys.addaudithook(on_audit)
