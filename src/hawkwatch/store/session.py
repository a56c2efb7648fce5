"""Session folders: one per process start, named as MTHawkeye names them.

Root: ``$HAWKWATCH_HOME/sessions``, by default ``~/.hawkwatch/sessions``. A folder is named from
the process start time in local time, ``YYYY-MM-DD_HH-MM-SS+mmm`` (MTHawkeye's code form; its
docs' ``HH:mm:ss`` form is accepted when reading). When two processes start in the same
millisecond the later one takes the next free millisecond, so every name still parses.

``session.json`` is hawkwatch's addition; an MTHawkeye folder copied from an iPhone has none and
opens all the same. Retention runs when a session is created: the newest ``keep`` sessions are
kept, older ones and those past ``max_age_days`` (by name, as MTHawkeye does) are removed. Unlike
MTHawkeye, only session folders count towards ``keep``, other entries are never touched, and a
session whose process is still alive is never removed.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Iterable

from hawkwatch._lazylog import lazy_logger
from hawkwatch._version import __version__
from hawkwatch.errors import NotASessionError, StoreError
from hawkwatch.home import home_folder
from hawkwatch.model.plain_records import json_round_trip, json_text
from hawkwatch.model.session_name import format_session_name
from hawkwatch.store._process import is_same_process_alive, process_start_time
from hawkwatch.store.files import path_join, path_name, path_text, read_regular
from hawkwatch.store.records import RECORDS_NAME, RecordsRead, RecordStore, read_records

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Final

log = lazy_logger(__name__)

METADATA_NAME: Final = "session.json"
METADATA_FORMAT: Final = "hawkwatch-session"
METADATA_VERSION: Final = 1
DEFAULT_KEEP: Final = 10
DEFAULT_MAX_AGE_DAYS: Final = 7.0

MAX_METADATA_BYTES: Final = 1 << 20
"""A ``session.json`` larger than this (1 MiB) is not read."""
MAX_START_TIME: Final = 32_503_680_000.0
"""Start times from year 3000 on are not believed (``session.json`` damaged or forged)."""

_IMPLEMENTATIONS: Final = {"cpython": "CPython", "pypy": "PyPy"}
_STORE_FILES: Final = (f"{RECORDS_NAME}.mtlog", f"{RECORDS_NAME}.mmap2", METADATA_NAME)
_SEPARATORS: Final = {4: "-", 7: "-", 10: "_", 13: "-:", 16: "-:", 19: "+"}
_FIELDS: Final = ((0, 4), (5, 7), (8, 10), (11, 13), (14, 16), (17, 19), (20, 23))


def sessions_root(root: str | os.PathLike[str] | None = None) -> Path:
    """The folder holding session folders: ``root``, else ``$HAWKWATCH_HOME/sessions``."""
    from pathlib import Path  # readers' view; the agent's start takes sessions_folder

    return Path(sessions_folder(root))


def sessions_folder(root: str | os.PathLike[str] | None = None) -> str:
    """``sessions_root`` as a ``str``, found with ``os.path`` alone (the agent's start)."""
    if root is None:
        return path_join(home_folder(), "sessions")
    text = path_text(root)
    if text.startswith("~"):  # Path.expanduser: the first part, and an error if it stays
        head, slash, rest = text.partition("/")
        home = os.path.expanduser(head)
        if home.startswith("~"):
            raise RuntimeError("Could not determine home directory.")
        text = path_text(home + slash + rest)
    return text


def _name_fields(name: str) -> tuple[int, ...] | None:
    r"""The numbers of a session name, found without ``re``: what
    ``^(\d{4})-(\d\d)-(\d\d)_(\d\d)[-:](\d\d)[-:](\d\d)\+(\d{3})$`` matches, as ``re`` reads
    it (any Unicode decimal digit; ``$`` also before a final newline). Tested against it."""
    text = name[:-1] if name.endswith("\n") else name
    if len(text) != 23:
        return None
    for index, allowed in _SEPARATORS.items():
        if text[index] not in allowed:
            return None
    fields = [text[start:end] for start, end in _FIELDS]
    if not all(field.isdecimal() for field in fields):
        return None
    return tuple(int(field) for field in fields)


def parse_session_name(name: str) -> float | None:
    """The Unix time a session name stands for, or None if it is not a session name."""
    fields = _name_fields(name)
    if fields is None:
        return None
    year, month, day, hour, minute, second, millis = fields
    try:
        seconds = time.mktime((year, month, day, hour, minute, second, 0, 0, -1))
    except (OverflowError, ValueError):
        return None
    return seconds + millis / 1000


class Session:
    """One session folder: hawkwatch's own, or an MTHawkeye folder from iOS.

    ``path`` is the folder as a ``Path``, made at its first use; the agent works with
    ``folder``, the same path as a ``str`` (its start does not import ``pathlib``). The
    ``session.json`` this object last wrote is kept, so reading it back (``metadata``,
    ``update_metadata``) needs no ``json`` while the file on disk is still that one (same
    inode, size and modification time); a file anyone else wrote is read from disk.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.folder = path_text(path)
        self.name = path_name(self.folder)
        self._path: Path | None = None
        self._metadata_lock = threading.Lock()  # per object: a forked child makes its own
        self._written: tuple[tuple[int, int, int, int], dict[str, Any]] | None = None

    @property
    def path(self) -> Path:
        path = self._path
        if path is None:
            from pathlib import Path

            path = self._path = Path(self.folder)
        return path

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Session:
        """Open an existing session folder; ``NotASessionError`` when ``path`` is not one."""
        from pathlib import Path

        folder = Path(path).expanduser()
        if not folder.is_dir():
            raise NotASessionError(f"{folder}: no such session folder")
        if not any((folder / name).is_file() for name in _STORE_FILES):
            raise NotASessionError(
                f"{folder}: not a session folder (it has no records.mtlog, records.mmap2 or "
                "session.json); pass a folder listed by 'hawkwatch sessions' or an MTHawkeye "
                "session folder"
            )
        return cls(folder)

    @classmethod
    def create(
        cls,
        *,
        root: str | os.PathLike[str] | None = None,
        app_name: str | None = None,
        app_version: str | None = None,
        start_time: float | None = None,
        keep: int | None = DEFAULT_KEEP,
        max_age_days: float = DEFAULT_MAX_AGE_DAYS,
        extra: dict[str, Any] | None = None,
    ) -> Session:
        """Create the folder for this process start, write ``session.json``, apply retention
        (``keep=None``: not here, the caller applies it later, as the agent does)."""
        base = sessions_folder(root)
        started = start_time if start_time is not None else process_start_time()
        try:
            os.makedirs(base, exist_ok=True)
            folder = _make_unique_folder(base, started)
        except OSError as exc:
            raise StoreError(f"{base}: cannot create a session folder: {exc}") from exc
        session = cls(folder)
        metadata = _metadata(started, app_name, app_version)
        metadata.update(extra or {})
        session.write_metadata(metadata)
        if keep is not None:
            remove_old_sessions(base, keep=keep, max_age_days=max_age_days, protect=folder)
        return session

    # -- contents ------------------------------------------------------------------------

    @property
    def is_hawkwatch(self) -> bool:
        """True for hawkwatch's own sessions, False for MTHawkeye folders."""
        return os.path.isfile(path_join(self.folder, METADATA_NAME))

    @property
    def metadata(self) -> dict[str, Any]:
        """``session.json``, or an empty dict (MTHawkeye folders, unreadable files)."""
        path = path_join(self.folder, METADATA_NAME)
        written = self._written
        if written is not None and _identity(path) == written[0]:
            copy: dict[str, Any] = json_round_trip(written[1])
            return copy
        import json  # a file this object did not write: readers, or someone else's

        try:
            raw = read_regular(path, MAX_METADATA_BYTES, too_big="too large")
            data = json.loads(raw.decode("utf-8")) if raw else {}
        except (StoreError, ValueError, RecursionError):  # unreadable, not JSON, deeply nested
            return {}
        return data if isinstance(data, dict) else {}

    @property
    def metadata_problem(self) -> str | None:
        """Why ``session.json`` is there but unusable (``metadata`` is then ``{}``), else None.

        The message names the file, not the folder (callers name the session).
        """
        import json

        path = path_join(self.folder, METADATA_NAME)
        if not os.path.lexists(path):
            return None  # an MTHawkeye folder: none is expected
        try:  # regular files only, bounded: a FIFO there must not hang the reader
            raw = read_regular(path, MAX_METADATA_BYTES, too_big="too large")
            data = json.loads(raw.decode("utf-8"))
        except StoreError as exc:
            return f"{METADATA_NAME} cannot be read ({str(exc).removeprefix(f'{path}: ')})"
        except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, absurdly nested
            return f"{METADATA_NAME} is not valid JSON ({exc}); the run's details are unknown"
        if not isinstance(data, dict):
            return f"{METADATA_NAME} is not a JSON object; the run's details are unknown"
        return None

    def write_metadata(self, metadata: dict[str, Any]) -> None:
        """Replace ``session.json`` atomically (``json.dumps(metadata, indent=2, default=str)``,
        written by ``plain_records.json_text``)."""
        target = path_join(self.folder, METADATA_NAME)
        temporary = path_join(self.folder, f".{METADATA_NAME}.{os.getpid()}.tmp")
        self._written = None
        try:
            text = json_text(metadata, indent=2, default=str)
            with open(temporary, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                written = os.fstat(f.fileno())  # the inode the rename puts in place
            os.replace(temporary, target)
        except OSError as exc:
            raise StoreError(f"{target}: cannot write session metadata: {exc}") from exc
        self._written = _kept(written, metadata)

    def update_metadata(self, key: str, value: Any) -> None:
        """Set one top-level key of ``session.json`` (monitors on different threads add theirs)."""
        with self._metadata_lock:
            metadata = self.metadata
            metadata[key] = value
            self.write_metadata(metadata)

    @property
    def start_time(self) -> float | None:
        """Process start (Unix s): from ``session.json``, else from the folder name."""
        started = self.metadata.get("start_time")
        if isinstance(started, int | float) and not isinstance(started, bool):
            seconds = float(started)
            if math.isfinite(seconds) and 0 <= seconds < MAX_START_TIME:
                return seconds
        return parse_session_name(self.name)

    def records(self, collection: str | None = None) -> RecordsRead:
        """Read the records without changing any file."""
        return read_records(self.folder, collection)

    def open_store(self) -> RecordStore:
        """Open the records file for writing (recovering what a dead writer left)."""
        return RecordStore(self.folder, launch_time=self.start_time)

    def size_bytes(self) -> int:
        """Bytes on disk, side files included."""
        total = 0
        for entry in self.path.rglob("*"):
            try:
                if entry.is_file():
                    total += entry.stat().st_size
            except OSError:
                continue
        return total

    def previous(self) -> Session | None:
        """The newest session in the same root that started before this one."""
        earlier = [s for s in list_sessions(self.path.parent) if s.name < self.name]
        return earlier[-1] if earlier else None

    def __repr__(self) -> str:
        return f"Session({self.folder!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Session) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)


def _identity(path: str) -> tuple[int, int, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def _kept(
    written: os.stat_result, metadata: dict[str, Any]
) -> tuple[tuple[int, int, int, int], dict[str, Any]] | None:
    """What ``metadata`` reads back as, with the identity of the file holding it (None when
    the round trip cannot be built faithfully: the file is read then)."""
    try:
        value = json_round_trip(metadata, default=str)
    except (TypeError, ValueError):
        return None
    identity = (written.st_dev, written.st_ino, written.st_size, written.st_mtime_ns)
    return (identity, value) if isinstance(value, dict) else None


def list_sessions(root: str | os.PathLike[str] | None = None) -> list[Session]:
    """Session folders under ``root``, oldest first; other entries are ignored."""
    base = sessions_folder(root)
    try:  # scandir: the kind of each entry comes with the listing (no stat per folder)
        with os.scandir(base) as listing:
            names = sorted(
                entry.name
                for entry in listing
                if _name_fields(entry.name) is not None and entry.is_dir()
            )
    except OSError:
        return []
    return [
        Session(path_join(base, name)) for name in names if parse_session_name(name) is not None
    ]


def latest_session(root: str | os.PathLike[str] | None = None) -> Session | None:
    """The newest session under ``root``, or None."""
    found = list_sessions(root)
    return found[-1] if found else None


def apply_retention(
    root: str | os.PathLike[str],
    *,
    keep: int = DEFAULT_KEEP,
    max_age_days: float = DEFAULT_MAX_AGE_DAYS,
    now: float | None = None,
    protect: Iterable[str | os.PathLike[str]] = (),
) -> list[Path]:
    """Remove sessions beyond the newest ``keep`` or older than ``max_age_days``.

    Only folders whose names parse as session names are considered; ``protect`` and sessions of
    processes still running are kept. Returns the folders removed.
    """
    removed = remove_old_sessions(
        root, keep=keep, max_age_days=max_age_days, now=now, protect=protect
    )
    if not removed:
        return []
    from pathlib import Path

    return [Path(folder) for folder in removed]


def remove_old_sessions(
    root: str | os.PathLike[str],
    *,
    keep: int = DEFAULT_KEEP,
    max_age_days: float = DEFAULT_MAX_AGE_DAYS,
    now: float | None = None,
    protect: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] = (),
) -> list[str]:
    """``apply_retention`` with ``str`` paths (the agent's scheduler thread: no ``pathlib``);
    ``protect`` is one folder or several."""
    now = time.time() if now is None else now
    kept = [protect] if isinstance(protect, str | os.PathLike) else protect
    protected = {path_text(p) for p in kept}
    newest_first = list(reversed(list_sessions(root)))
    removed: list[str] = []
    for index, session in enumerate(newest_first):
        started = parse_session_name(session.name)
        too_old = started is not None and started < now - max_age_days * 86_400
        if not (too_old or index >= keep):
            continue
        if session.folder in protected or _process_alive(session):
            continue
        try:
            import shutil

            shutil.rmtree(session.folder)
        except OSError as exc:
            log.warning("hawkwatch: cannot remove old session %s: %s", session.folder, exc)
            continue
        removed.append(session.folder)
    return removed


def _make_unique_folder(base: str, started: float) -> str:
    millis = round(started * 1000)
    for _ in range(100_000):
        folder = path_join(base, format_session_name(millis / 1000))
        try:
            os.mkdir(folder)
        except FileExistsError:
            millis += 1
            continue
        return folder
    raise StoreError(f"{base}: no free session name near {format_session_name(started)}")


def _metadata(started: float, app_name: str | None, app_version: str | None) -> dict[str, Any]:
    # os.uname() rather than platform.platform(), which runs `uname -p` in a child process.
    system = os.uname()
    implementation = sys.implementation.name
    return {
        "format": METADATA_FORMAT,
        "format_version": METADATA_VERSION,
        "hawkwatch_version": __version__,
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "argv": list(sys.argv),
        "executable": sys.executable,
        "python_version": ".".join(str(part) for part in sys.version_info[:3]),
        "python_implementation": _IMPLEMENTATIONS.get(implementation, implementation),
        "hostname": system.nodename,
        "platform": f"{system.sysname}-{system.release}-{system.machine}",
        "start_time": started,
        "app_name": app_name,
        "app_version": app_version,
    }


def _process_alive(session: Session) -> bool:
    metadata = session.metadata
    pid, started = metadata.get("pid"), metadata.get("start_time")
    if not isinstance(pid, int) or not isinstance(started, int | float):
        return False
    return is_same_process_alive(pid, float(started))
