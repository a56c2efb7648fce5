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

import json
import math
import os
import re
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from hawkwatch._lazylog import lazy_logger
from hawkwatch._version import __version__
from hawkwatch.errors import NotASessionError, StoreError
from hawkwatch.home import hawkwatch_home
from hawkwatch.model.session_name import format_session_name
from hawkwatch.store._process import is_same_process_alive, process_start_time
from hawkwatch.store.files import read_regular
from hawkwatch.store.records import RECORDS_NAME, RecordsRead, RecordStore, read_records

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
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
_NAME = re.compile(r"^(\d{4})-(\d\d)-(\d\d)_(\d\d)[-:](\d\d)[-:](\d\d)\+(\d{3})$")
_STORE_FILES: Final = (f"{RECORDS_NAME}.mtlog", f"{RECORDS_NAME}.mmap2", METADATA_NAME)


def sessions_root(root: str | os.PathLike[str] | None = None) -> Path:
    """The folder holding session folders: ``root``, else ``$HAWKWATCH_HOME/sessions``."""
    if root is not None:
        return Path(root).expanduser()
    return hawkwatch_home() / "sessions"


def parse_session_name(name: str) -> float | None:
    """The Unix time a session name stands for, or None if it is not a session name."""
    match = _NAME.match(name)
    if match is None:
        return None
    year, month, day, hour, minute, second, millis = (int(g) for g in match.groups())
    try:
        seconds = time.mktime((year, month, day, hour, minute, second, 0, 0, -1))
    except (OverflowError, ValueError):
        return None
    return seconds + millis / 1000


class Session:
    """One session folder: hawkwatch's own, or an MTHawkeye folder from iOS."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = path.name
        self._metadata_lock = threading.Lock()  # per object: a forked child makes its own

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Session:
        """Open an existing session folder; ``NotASessionError`` when ``path`` is not one."""
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
        base = sessions_root(root)
        started = start_time if start_time is not None else process_start_time()
        try:
            base.mkdir(parents=True, exist_ok=True)
            folder = _make_unique_folder(base, started)
        except OSError as exc:
            raise StoreError(f"{base}: cannot create a session folder: {exc}") from exc
        session = cls(folder)
        metadata = _metadata(started, app_name, app_version)
        metadata.update(extra or {})
        session.write_metadata(metadata)
        if keep is not None:
            apply_retention(base, keep=keep, max_age_days=max_age_days, protect=[folder])
        return session

    # -- contents ------------------------------------------------------------------------

    @property
    def is_hawkwatch(self) -> bool:
        """True for hawkwatch's own sessions, False for MTHawkeye folders."""
        return (self.path / METADATA_NAME).is_file()

    @property
    def metadata(self) -> dict[str, Any]:
        """``session.json``, or an empty dict (MTHawkeye folders, unreadable files)."""
        try:
            raw = read_regular(self.path / METADATA_NAME, MAX_METADATA_BYTES, too_big="too large")
            data = json.loads(raw.decode("utf-8")) if raw else {}
        except (StoreError, ValueError, RecursionError):  # unreadable, not JSON, deeply nested
            return {}
        return data if isinstance(data, dict) else {}

    @property
    def metadata_problem(self) -> str | None:
        """Why ``session.json`` is there but unusable (``metadata`` is then ``{}``), else None.

        The message names the file, not the folder (callers name the session).
        """
        path = self.path / METADATA_NAME
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
        """Replace ``session.json`` atomically."""
        target = self.path / METADATA_NAME
        temporary = target.with_name(f".{METADATA_NAME}.{os.getpid()}.tmp")
        try:
            temporary.write_text(json.dumps(metadata, indent=2, default=str), encoding="utf-8")
            temporary.replace(target)
        except OSError as exc:
            raise StoreError(f"{target}: cannot write session metadata: {exc}") from exc

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
        return read_records(self.path, collection)

    def open_store(self) -> RecordStore:
        """Open the records file for writing (recovering what a dead writer left)."""
        return RecordStore(self.path, launch_time=self.start_time)

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
        return f"Session({str(self.path)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Session) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)


def list_sessions(root: str | os.PathLike[str] | None = None) -> list[Session]:
    """Session folders under ``root``, oldest first; other entries are ignored."""
    base = sessions_root(root)
    try:  # scandir: the kind of each entry comes with the listing (no stat per folder)
        with os.scandir(base) as listing:
            names = sorted(
                entry.name
                for entry in listing
                if _NAME.match(entry.name) is not None and entry.is_dir()
            )
    except OSError:
        return []
    return [Session(base / name) for name in names if parse_session_name(name) is not None]


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
    protect: Iterable[Path] = (),
) -> list[Path]:
    """Remove sessions beyond the newest ``keep`` or older than ``max_age_days``.

    Only folders whose names parse as session names are considered; ``protect`` and sessions of
    processes still running are kept. Returns the folders removed.
    """
    now = time.time() if now is None else now
    protected = {Path(p) for p in protect}
    newest_first = list(reversed(list_sessions(root)))
    removed: list[Path] = []
    for index, session in enumerate(newest_first):
        started = parse_session_name(session.name)
        too_old = started is not None and started < now - max_age_days * 86_400
        if not (too_old or index >= keep):
            continue
        if session.path in protected or _process_alive(session):
            continue
        try:
            import shutil

            shutil.rmtree(session.path)
        except OSError as exc:
            log.warning("hawkwatch: cannot remove old session %s: %s", session.path, exc)
            continue
        removed.append(session.path)
    return removed


def _make_unique_folder(base: Path, started: float) -> Path:
    millis = round(started * 1000)
    for _ in range(100_000):
        folder = base / format_session_name(millis / 1000)
        try:
            folder.mkdir()
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
