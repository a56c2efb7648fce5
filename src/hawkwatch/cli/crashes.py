"""``hawkwatch crashes DIR``: the crash reports under a folder, grouped by fingerprint."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hawkwatch.analysis.crash_grouping import CrashGroup, GroupingConfig, group_crashes
from hawkwatch.errors import FormatError, HawkwatchError
from hawkwatch.formats.crash import read_crash
from hawkwatch.model.crash import CrashReport


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path",
        metavar="DIR",
        help="a folder of .crash, .ips or KSCrash files, or of hawkwatch sessions (their Python "
        "crash records)",
    )
    parser.add_argument(
        "--frames", type=int, default=5, metavar="N", help="in-app frames per fingerprint (5)"
    )
    parser.add_argument(
        "--in-app",
        action="append",
        default=[],
        metavar="GLOB",
        help="image names that count as the app's own code (repeatable)",
    )
    parser.add_argument(
        "--not-in-app",
        action="append",
        default=None,
        metavar="GLOB",
        help="image names inside the app bundle that are not its code (default: libswift*)",
    )
    parser.add_argument(
        "--symbolicate",
        action="store_true",
        help="symbolicate every report first (symbol store), so unsymbolicated reports group "
        "by function instead of by image",
    )
    parser.add_argument(
        "--symbols",
        action="append",
        default=[],
        metavar="DIR",
        help="also search this folder for debug files; implies --symbolicate (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")


def run(args: argparse.Namespace) -> int:
    root = Path(args.path).expanduser()
    if not root.is_dir():
        raise HawkwatchError(f"{root}: not a folder")
    if args.frames < 1:
        raise HawkwatchError(f"--frames must be at least 1, not {args.frames}")
    config = GroupingConfig(
        frames=args.frames,
        in_app_include=tuple(args.in_app),
        in_app_exclude=tuple(args.not_in_app)
        if args.not_in_app is not None
        else GroupingConfig().in_app_exclude,
    )
    reports, duplicates, unreadable = _read_all(root)
    if args.symbolicate or args.symbols:
        reports = _symbolicated(reports, args.symbols)
    groups = group_crashes(reports, config)
    if args.json:
        document = {
            "folder": str(root),
            "reports": len(reports),
            "duplicates": duplicates,
            "groups": [_group_json(group, root) for group in groups],
            "not_read": [
                {"path": _relative(path, root), "reason": why} for path, why in unreadable
            ],
        }
        sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(_text(groups, root))
    summary = f"{len(reports):,} crash reports in {len(groups):,} groups from {root}"
    if duplicates:
        summary += f"; {duplicates:,} duplicates of the same incident counted once"
    if unreadable:
        path, why = unreadable[0]
        summary += f"; {len(unreadable):,} files not read (first: {_relative(path, root)}: {why})"
    print(summary, file=sys.stderr)
    return 0 if reports or not unreadable else 1


def _session_folders(root: Path) -> list[Path]:
    """hawkwatch session folders at or under ``root`` (they hold ``session.json``)."""
    if (root / "session.json").is_file():
        return [root]
    return sorted(path.parent for path in root.rglob("session.json"))


def _files(root: Path, skip: list[Path]) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        if any(path.is_relative_to(folder) for folder in skip):
            continue
        if path.is_file() and not path.name.startswith(".") and "LICENSE" not in path.name:
            yield path


def _python_crashes(folders: list[Path], root: Path) -> list[tuple[str, CrashReport]]:
    """The ``crash`` records of hawkwatch sessions, in the one crash model (issue 15)."""
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


def _read_all(root: Path) -> tuple[list[tuple[str, CrashReport]], int, list[tuple[Path, str]]]:
    reports: list[tuple[str, CrashReport]] = []
    seen: set[str] = set()
    duplicates = 0
    unreadable: list[tuple[Path, str]] = []
    sessions = _session_folders(root)
    reports.extend(_python_crashes(sessions, root))
    for path in _files(root, sessions):
        try:
            report = read_crash(path).value
        except FormatError as exc:
            unreadable.append((path, exc.reason))
            continue
        incident = (report.incident_id or "").upper()
        if incident and incident.strip("0-"):
            if incident in seen:
                duplicates += 1
                continue
            seen.add(incident)
        reports.append((_relative(path, root), report))
    return reports, duplicates, unreadable


def _symbolicated(
    reports: list[tuple[str, CrashReport]], folders: list[str]
) -> list[tuple[str, CrashReport]]:
    from hawkwatch.symbols import SymbolStore, symbolic, symbolicate

    symbolic()  # names the extra to install when it is missing
    store = SymbolStore(None, extra=folders)
    return [(source, symbolicate(report, store)) for source, report in reports]


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _when(value: str | None) -> str:
    if not value:
        return "-"
    return value.replace("T", " ")[:19]


def _text(groups: list[CrashGroup], root: Path) -> str:
    if not groups:
        return f"no crash reports under {root}\n"
    lines = [f"{'COUNT':>5}  {'FIRST SEEN':<19}  {'LAST SEEN':<19}  {'GROUP':<16}  CRASH"]
    for group in groups:
        key = group.fingerprint
        lines.append(
            f"{group.count:>5}  {_when(group.first_seen):<19}  {_when(group.last_seen):<19}  "
            f"{key.hash:<16}  {key.title}"
        )
        lines.append(f"{'':>5}  representative: {group.representative}")
    return "\n".join(lines) + "\n"


def _group_json(group: CrashGroup, root: Path) -> dict[str, Any]:
    key = group.fingerprint
    first = group.reports[0]
    return {
        "fingerprint": key.hash,
        "variant": key.variant,
        "title": key.title,
        "components": list(key.components),
        "count": group.count,
        "first_seen": group.first_seen,
        "last_seen": group.last_seen,
        "representative": group.representative,
        "process": first.process,
        "exception": {
            "type": first.exception.type,
            "signal": first.exception.signal,
            "name": first.exception.name,
            "reason": first.exception.reason,
        },
        "reports": group.sources,
    }
