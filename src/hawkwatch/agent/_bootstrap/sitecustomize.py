"""Put first on PYTHONPATH by ``hawkwatch run``: start the agent before any user code runs.

Then the program's own ``sitecustomize`` (if any, further along ``sys.path``) is run, so
installing hawkwatch this way changes nothing else about start-up.

Only the program ``hawkwatch run`` started (``_HAWKWATCH_SUPERVISED``, removed once read) starts an
agent, unless ``hawkwatch run --children`` asked for every Python child (``_HAWKWATCH_CHILDREN``;
``hawkwatch.runenv`` documents both): any other Python process that inherits this ``PYTHONPATH``
returns here before importing anything of hawkwatch, at a cost of well under a millisecond.
"""

import os
import sys

try:  # importlib.machinery.PathFinder without importing importlib (CPython has it loaded)
    from _frozen_importlib_external import PathFinder
except ImportError:  # pragma: no cover - other Pythons
    from importlib.machinery import PathFinder


def _wanted() -> bool:
    env = os.environ
    if env.get("HAWKWATCH_ENABLED", "").strip().lower() in ("0", "false", "no", "off"):
        return False  # switched off: not even imported
    return env.get("_HAWKWATCH_SUPERVISED") == "1" or env.get("_HAWKWATCH_CHILDREN") == "1"


def _warn(message: str, *args: object) -> None:
    import logging

    logging.getLogger("hawkwatch").warning(message, *args)


def _start_hawkwatch() -> None:
    if not _wanted():
        return
    session_file = os.environ.get("_HAWKWATCH_SESSION_FILE")  # hawkwatch.runenv.SESSION_FILE_VAR
    try:
        from hawkwatch.agent.bootstrap import start_from_environment
    except ImportError:
        hint = os.environ.get("_HAWKWATCH_PYTHON")  # hawkwatch.runenv.PYTHON_VAR
        _warn(
            "hawkwatch: not installed for %s; running without monitoring%s",
            sys.executable,
            f" (the Python that has it: {hint})" if hint else "",
        )
        _tell_supervisor(session_file, "hawkwatch is not installed for this Python")
        os.environ.pop("_HAWKWATCH_SESSION_FILE", None)  # for this process only
        return
    try:
        start_from_environment()
    except Exception as exc:
        _warn("hawkwatch: the agent did not start: %s", exc)
        _tell_supervisor(session_file, "the agent did not start")


def _start_without_collections() -> None:
    """Start the agent with the cyclic garbage collector paused.

    Importing and starting the agent allocates tens of thousands of long-lived objects, which
    set off some 30 collections that find nothing (~10 M instructions, a fifth of the agent's
    start); ``bootstrap`` then ``gc.freeze()``s them all anyway. This is the pattern the ``gc``
    documentation gives for ``freeze`` (disable early, freeze, enable). A collector the
    program's environment switched off stays off.
    """
    import gc  # built in: no import cost

    collecting = gc.isenabled()
    gc.disable()
    try:
        _start_hawkwatch()
    finally:
        if collecting:
            gc.enable()


def _tell_supervisor(session_file: "str | None", cause: str) -> None:
    """Let ``hawkwatch run`` know the cause was given (a line starting with "!")."""
    if not session_file:
        return
    try:
        with open(session_file, "x", encoding="utf-8") as f:
            f.write(f"!{cause}")
    except OSError:
        pass


def _run_next_sitecustomize() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    from importlib.util import module_from_spec  # only with one to run (~3 M instructions)

    module = module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_start_without_collections()
_run_next_sitecustomize()
