"""What is in the sessions root, and one session's raw records (``sessions``, ``records``)."""

from __future__ import annotations

from dataclasses import dataclass

from hawkwatch.analysis.crash_report import session_exit_kind
from hawkwatch.api.session import PathLike, Session
from hawkwatch.errors import HawkwatchError, UsageError
from hawkwatch.model import Record, Skipped
from hawkwatch.model import collections as c
from hawkwatch.store import list_sessions as _session_folders
from hawkwatch.store import sessions_root


@dataclass(frozen=True, slots=True)
class SessionRow:
    """One recorded session, as ``hawkwatch sessions`` lists it."""

    name: str
    path: str
    start_time: float | None
    app_name: str | None
    size_bytes: int
    records: int | None  # None: the records could not be read (see ``error``)
    error: str | None = None
    exit: str | None = None
    """How the process ended (exit vocabulary); None: running, or not classified yet."""


@dataclass(frozen=True, slots=True)
class SessionList:
    """The sessions under one root, oldest first."""

    root: str
    sessions: tuple[SessionRow, ...]


def list_sessions(root: PathLike | None = None) -> SessionList:
    """Every session under ``root`` (default ``$HAWKWATCH_HOME/sessions``), oldest first.

    A ``root`` given explicitly must be a folder (``UsageError``); the default one may not exist
    yet (no run recorded).
    """
    base = sessions_root(root)
    if root is not None and not base.is_dir():
        raise UsageError(f"{base}: no such folder; pass the folder that holds session folders")
    rows = []
    for folder in _session_folders(base):
        app_name = folder.metadata.get("app_name")
        exit_kind = None
        try:
            read = folder.records().records
            records: int | None = len(read)
            error = None
            exit_kind = session_exit_kind(read)
        except HawkwatchError as exc:  # one unreadable session must not hide the others
            records, error = None, str(exc)
        rows.append(
            SessionRow(
                name=folder.name,
                path=str(folder.path),
                start_time=folder.start_time,
                app_name=app_name if isinstance(app_name, str) else None,
                size_bytes=folder.size_bytes(),
                records=records,
                error=error,
                exit=exit_kind,
            )
        )
    return SessionList(str(base), tuple(rows))


@dataclass(frozen=True, slots=True)
class RecordListing:
    """A session's raw records (one collection, or all), in stored order."""

    session: str
    collection: str | None
    records: tuple[Record, ...]
    skipped: tuple[Skipped, ...]


def session_records(session: Session, collection: str | None = None) -> RecordListing:
    """The records of ``session`` (only ``collection``'s when given).

    A collection that neither the session holds nor hawkwatch or MTHawkeye writes is a
    ``UsageError`` naming the ones the session has.
    """
    records = session.records
    if collection is not None:
        records = [record for record in records if record.collection == collection]
        if not records and collection not in _KNOWN:
            present = sorted({record.collection for record in session.records})
            raise UsageError(
                f"no collection {collection!r} in {session.path}; it has: "
                f"{', '.join(present) or 'no records'}"
            )
    return RecordListing(str(session.path), collection, tuple(records), tuple(session.skipped))


_KNOWN = frozenset(
    value for name, value in vars(c).items() if name.isupper() and isinstance(value, str)
)


__all__ = ["RecordListing", "SessionList", "SessionRow", "list_sessions", "session_records"]
