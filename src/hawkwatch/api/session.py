"""Sessions as a user opens them from Python: found by folder or name, records read and typed.

``load_session`` is what every session command starts from: it finds the folder (a path, a name
under the sessions root, or the newest session), reads the records once and resolves what lives
beside them (``cpu-highload-stackframe-ext``, ``cpu-profile/<key>.json``) on first use. hawkwatch
sessions and MTHawkeye folders copied from an iPhone load the same way.
"""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from hawkwatch.errors import NotASessionError
from hawkwatch.formats.cpu_profile import read_profiles
from hawkwatch.formats.hawkeye_cpu import read_highload
from hawkwatch.model import Parsed, Record, Skipped
from hawkwatch.model.profile import HighLoadEpisode, Profile
from hawkwatch.model.records import DecodedRecords, TypedRecord, decode_all
from hawkwatch.model.report import SessionSource
from hawkwatch.store import Session as SessionFolder
from hawkwatch.store import latest_session, sessions_root

T = TypeVar("T", bound=TypedRecord)
PathLike = str | os.PathLike[str]


class Session:
    """One loaded session: its folder, metadata and records (read once, in stored order)."""

    def __init__(self, folder: SessionFolder) -> None:
        self.folder = folder
        read = folder.records()
        #: every record that could be read, in stored order
        self.records: list[Record] = read.records
        #: lines of the records file that could not be turned into records
        self.skipped: list[Skipped] = read.skipped

    @property
    def path(self) -> Path:
        return self.folder.path

    @property
    def name(self) -> str:
        return self.folder.name

    @property
    def is_hawkwatch(self) -> bool:
        """True for hawkwatch's own sessions, False for MTHawkeye folders."""
        return self.folder.is_hawkwatch

    @property
    def source(self) -> SessionSource:
        return "hawkwatch" if self.is_hawkwatch else "mthawkeye"

    @cached_property
    def metadata(self) -> dict[str, Any]:
        """``session.json`` (empty for MTHawkeye folders)."""
        return self.folder.metadata

    @property
    def start_time(self) -> float | None:
        """Process start (Unix s), from ``session.json`` or the folder name."""
        return self.folder.start_time

    @cached_property
    def decoded(self) -> DecodedRecords:
        """The records typed by collection; undecodable ones in ``.rejected`` with a reason."""
        return decode_all(self.records)

    def of(self, kind: type[T]) -> list[T]:
        """The decoded records of ``kind``'s collection, in stored order."""
        return self.decoded.of(kind)

    def collection(self, name: str) -> list[Record]:
        """The raw records of one collection, in stored order."""
        return [record for record in self.records if record.collection == name]

    @cached_property
    def highload(self) -> Parsed[list[HighLoadEpisode]]:
        """CPU high-load episodes, the ``-ext`` side file's trees included."""
        return read_highload(self.path, self.records, is_hawkwatch=self.is_hawkwatch)

    @cached_property
    def profiles(self) -> Parsed[list[Profile]]:
        """Continuous-profiler windows, side files under ``cpu-profile/`` included."""
        return read_profiles(self.path, self.records)

    @property
    def side_file_problems(self) -> int:
        """Episodes and profile windows that could not be read."""
        return len(self.highload.skipped) + len(self.profiles.skipped)

    def __repr__(self) -> str:
        return f"hawkwatch.Session({str(self.path)!r}, records={len(self.records)})"


def find_session(given: PathLike | None = None, root: PathLike | None = None) -> SessionFolder:
    """The session folder ``given`` names: a folder, a name under ``root``, or (None) the newest.

    ``NotASessionError`` says what was looked for and where.
    """
    if given is not None and Path(os.fspath(given)).expanduser().is_dir():
        return SessionFolder.open(Path(os.fspath(given)).expanduser())  # needs no home directory
    base = sessions_root(root)
    if given is None:
        newest = latest_session(base)
        if newest is None:
            raise NotASessionError(
                f"no sessions under {base}; run your app with "
                "'hawkwatch run -- python app.py' first"
            )
        return newest
    text = os.fspath(given)
    path = Path(text).expanduser()
    if not path.is_dir() and len(path.parts) == 1 and (base / text).is_dir():
        path = base / text
    if path.is_file():
        raise NotASessionError(
            f"{text}: a file, not a session folder; pass a folder that "
            "'hawkwatch sessions' lists (crash reports go to 'hawkwatch crashes' or "
            "'hawkwatch symbolicate')"
        )
    if not path.exists():
        raise NotASessionError(
            f"{text}: no such session folder, nor a session of that name under {base}; "
            "'hawkwatch sessions' lists them"
        )
    return SessionFolder.open(path)


def load_session(path_or_name: PathLike | None = None, root: PathLike | None = None) -> Session:
    """Open and read one session: a folder (hawkwatch or MTHawkeye), a name under ``root``
    (default ``$HAWKWATCH_HOME/sessions``), or the newest session when None."""
    return Session(find_session(path_or_name, root))
