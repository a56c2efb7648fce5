"""The crash-safe session store in MTHawkeye's on-disk format (stdlib and psutil only).

``read_appender``, the readers' module, loads on first use: the agent, which only writes, starts
without it.
"""

from hawkwatch.model.session_name import format_session_name
from hawkwatch.store.appender import AppenderContent, AppenderFile
from hawkwatch.store.records import (
    RecordsRead,
    RecordStore,
    escape_value,
    read_records,
    unescape_value,
)
from hawkwatch.store.session import (
    Session,
    apply_retention,
    latest_session,
    list_sessions,
    parse_session_name,
    sessions_root,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from hawkwatch.store.appender_read import read_appender as read_appender

__all__ = [
    "AppenderContent",
    "AppenderFile",
    "RecordStore",
    "RecordsRead",
    "Session",
    "apply_retention",
    "escape_value",
    "format_session_name",
    "latest_session",
    "list_sessions",
    "parse_session_name",
    "read_appender",
    "read_records",
    "sessions_root",
    "unescape_value",
]


def __getattr__(name: str) -> object:
    if name == "read_appender":
        from hawkwatch.store.appender_read import read_appender

        return read_appender
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
