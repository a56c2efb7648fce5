"""``hawkwatch crashes`` as a function: crash reports under a folder, read and grouped.

Every ``.crash``, ``.ips`` and KSCrash JSON file is read (hidden files and licence files are
passed over); reports sharing an incident identifier are one incident, counted once. Files that
are not crash reports are listed with the reason, never fatal.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from hawkwatch.analysis.crash_grouping import CrashGroup, GroupingConfig
from hawkwatch.analysis.crash_grouping import group_crashes as _group
from hawkwatch.api.session import PathLike
from hawkwatch.errors import FormatError, UsageError
from hawkwatch.formats.crash import read_crash
from hawkwatch.model.crash import CrashReport


@dataclass(frozen=True, slots=True)
class CrashFolder:
    """The crash reports read under one folder (or one file)."""

    folder: str
    #: (path relative to ``folder``, report), one per incident
    reports: tuple[tuple[str, CrashReport], ...]
    #: reports of an incident already read, counted once
    duplicates: int
    #: (relative path, reason) of files that are not crash reports
    not_read: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class CrashGroups:
    """Crash reports grouped by fingerprint, biggest group first."""

    folder: str
    reports: int
    duplicates: int
    groups: tuple[CrashGroup, ...]
    not_read: tuple[tuple[str, str], ...]


def read_crash_folder(path: PathLike) -> CrashFolder:
    """Read every crash report under ``path`` (a folder, or a single report file), and the
    Python ``crash`` records of the hawkwatch sessions among them, into the one crash model."""
    root = Path(path).expanduser()
    if not root.exists():
        raise UsageError(f"{root}: no such file or folder")
    base = root if root.is_dir() else root.parent
    sessions = _session_folders(root)
    reports: list[tuple[str, CrashReport]] = _python_crashes(sessions, base)
    seen: set[str] = set()
    duplicates = 0
    not_read: list[tuple[str, str]] = []
    for file in _files(root, sessions):
        try:
            report = read_crash(file).value
        except FormatError as exc:
            not_read.append((_relative(file, base), exc.reason))
            continue
        incident = (report.incident_id or "").upper()
        if incident and incident.strip("0-"):
            if incident in seen:
                duplicates += 1
                continue
            seen.add(incident)
        reports.append((_relative(file, base), report))
    return CrashFolder(str(root), tuple(reports), duplicates, tuple(not_read))


def group_crashes(
    path: PathLike,
    *,
    frames: int = 5,
    in_app: Sequence[str] = (),
    not_in_app: Sequence[str] | None = None,
    symbolicate: bool = False,
    symbols: Sequence[PathLike] = (),
) -> CrashGroups:
    """Group the crash reports under ``path`` by fingerprint.

    ``frames`` in-app frames make a fingerprint; ``in_app`` / ``not_in_app`` are image-name globs
    (default for the latter: ``libswift*``). With ``symbolicate`` (implied by ``symbols``
    folders) every report is symbolicated first, so unsymbolicated reports group by function.
    """
    if frames < 1:
        raise UsageError(f"--frames must be at least 1, not {frames}")
    config = GroupingConfig(
        frames=frames,
        in_app_include=tuple(in_app),
        in_app_exclude=tuple(not_in_app)
        if not_in_app is not None
        else GroupingConfig().in_app_exclude,
    )
    read = read_crash_folder(path)
    reports = read.reports
    if symbolicate or symbols:
        from hawkwatch.api.symbols import open_symbol_store
        from hawkwatch.symbols import symbolic
        from hawkwatch.symbols import symbolicate as symbolicate_report

        symbolic()  # names the extra to install when it is missing
        store = open_symbol_store(None, symbols)
        reports = tuple((source, symbolicate_report(report, store)) for source, report in reports)
    groups = _group(reports, config)
    return CrashGroups(read.folder, len(reports), read.duplicates, tuple(groups), read.not_read)


def _files(root: Path, skip: Sequence[Path] = ()) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    for path in sorted(root.rglob("*")):
        if any(path.is_relative_to(folder) for folder in skip):
            continue
        if path.is_file() and not path.name.startswith(".") and "LICENSE" not in path.name:
            yield path


def _session_folders(root: Path) -> list[Path]:
    """hawkwatch session folders at or under ``root`` (they hold ``session.json``)."""
    if root.is_file():
        return []
    if (root / "session.json").is_file():
        return [root]
    return sorted(path.parent for path in root.rglob("session.json"))


def _python_crashes(folders: list[Path], root: Path) -> list[tuple[str, CrashReport]]:
    """The ``crash`` records of hawkwatch sessions, as crash reports (issue 15)."""
    from hawkwatch.analysis.python_crash import to_crash_report
    from hawkwatch.model.records import Crash, RecordError
    from hawkwatch.store import Session, read_records

    found: list[tuple[str, CrashReport]] = []
    for folder in folders:
        app = Session(folder).metadata.get("app_name")
        for record in read_records(folder, Crash.collection).records:
            try:
                crash = Crash.from_record(record)
            except RecordError:
                continue
            report = to_crash_report(crash, process=app if isinstance(app, str) else None)
            found.append((f"{_relative(folder, root)}#crash@{record.key}", report))
    return found


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
