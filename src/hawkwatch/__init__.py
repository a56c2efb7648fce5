"""hawkwatch: application performance monitoring for Python.

Two surfaces, both listed in ``__all__`` and documented in ``docs/api.md``:

- the agent: ``start``, ``stop``, ``mark_ready``, ``event``, ``span``; for the stall monitor
  ``watch_loop`` and ``heartbeat``; for the I/O canary ``mark_loop_thread``. None of them raises
  into the calling code.
- the library under the ``hawkwatch`` command: ``load_session``, ``session_report``,
  ``profile``, ``group_crashes``, ``symbolicate``, ``jetsam`` … returning result objects that
  ``write_output`` writes as console text, JSON or an export.

The agent's calls come from ``_public``: ``event``, ``span``, ``mark_ready``, ``heartbeat`` and
``stop`` never import anything (a ``fork()`` in another thread cannot freeze them); ``start``,
``watch_loop`` and ``mark_loop_thread``, set-up calls, import the agent. The library's names are
loaded on first use, so ``import hawkwatch; hawkwatch.start()`` imports neither the library's
analysis code nor rich, and running the ``hawkwatch`` command does not import the agent.
"""

from __future__ import annotations

from hawkwatch._public import (
    event,
    heartbeat,
    mark_loop_thread,
    mark_ready,
    span,
    start,
    stop,
    watch_loop,
)
from hawkwatch._version import __version__
from hawkwatch.errors import HawkwatchError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    from typing import Any, Final

    from hawkwatch.api.allocations import AllocationResult, allocations
    from hawkwatch.api.crashes import CrashGroups, group_crashes, read_crash_folder
    from hawkwatch.api.debug import dump_file
    from hawkwatch.api.jetsam import JetsamResult, jetsam
    from hawkwatch.api.listing import SessionList, list_sessions, session_records
    from hawkwatch.api.network import NetworkReport, network_report
    from hawkwatch.api.options import effective_options
    from hawkwatch.api.profile import ProfileResult, profile, profile_listing
    from hawkwatch.api.report import session_report
    from hawkwatch.api.session import Session, load_session
    from hawkwatch.api.symbols import (
        SymbolicatedCrash,
        add_debug_files,
        list_debug_files,
        open_symbol_store,
        symbolicate,
    )
    from hawkwatch.report.outputs import formats_for, write_output

#: Public name → the module that defines it (imported on first use).
_LAZY: Final = {
    "Session": "hawkwatch.api.session",
    "load_session": "hawkwatch.api.session",
    "list_sessions": "hawkwatch.api.listing",
    "SessionList": "hawkwatch.api.listing",
    "session_records": "hawkwatch.api.listing",
    "session_report": "hawkwatch.api.report",
    "profile": "hawkwatch.api.profile",
    "profile_listing": "hawkwatch.api.profile",
    "ProfileResult": "hawkwatch.api.profile",
    "group_crashes": "hawkwatch.api.crashes",
    "read_crash_folder": "hawkwatch.api.crashes",
    "CrashGroups": "hawkwatch.api.crashes",
    "jetsam": "hawkwatch.api.jetsam",
    "JetsamResult": "hawkwatch.api.jetsam",
    "symbolicate": "hawkwatch.api.symbols",
    "SymbolicatedCrash": "hawkwatch.api.symbols",
    "open_symbol_store": "hawkwatch.api.symbols",
    "add_debug_files": "hawkwatch.api.symbols",
    "list_debug_files": "hawkwatch.api.symbols",
    "effective_options": "hawkwatch.api.options",
    "dump_file": "hawkwatch.api.debug",
    "network_report": "hawkwatch.api.network",
    "allocations": "hawkwatch.api.allocations",
    "AllocationResult": "hawkwatch.api.allocations",
    "NetworkReport": "hawkwatch.api.network",
    "write_output": "hawkwatch.report.outputs",
    "formats_for": "hawkwatch.report.outputs",
}

__all__ = [
    "AllocationResult",
    "CrashGroups",
    "HawkwatchError",
    "JetsamResult",
    "NetworkReport",
    "ProfileResult",
    "Session",
    "SessionList",
    "SymbolicatedCrash",
    "__version__",
    "add_debug_files",
    "allocations",
    "dump_file",
    "effective_options",
    "event",
    "formats_for",
    "group_crashes",
    "heartbeat",
    "jetsam",
    "list_debug_files",
    "list_sessions",
    "load_session",
    "mark_loop_thread",
    "mark_ready",
    "network_report",
    "open_symbol_store",
    "profile",
    "profile_listing",
    "read_crash_folder",
    "session_records",
    "session_report",
    "span",
    "start",
    "stop",
    "symbolicate",
    "watch_loop",
    "write_output",
]


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'hawkwatch' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
