"""The crash-safe session store in MTHawkeye's on-disk format (stdlib and psutil only)."""

from hawkwatch.model.session_name import format_session_name
from hawkwatch.store.appender import AppenderContent, AppenderFile
from hawkwatch.store.appender_read import read_appender
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
