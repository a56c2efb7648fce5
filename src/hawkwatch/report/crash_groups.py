"""``CrashGroups`` (``hawkwatch crashes``) as a text table and as JSON (``hawkwatch-crash-groups``).

Text: one line per group (count, first and last seen, fingerprint, title) and its representative
report; never wider than the title needs, so nothing is cut at 80 columns.
"""

from __future__ import annotations

from typing import Any, Final, TextIO

from hawkwatch.analysis.crash_grouping import CrashGroup
from hawkwatch.api.crashes import CrashGroups
from hawkwatch.report._json import document

FORMAT: Final = "hawkwatch-crash-groups"
FORMAT_VERSION: Final = 1


def render_text(result: CrashGroups, file: TextIO) -> None:
    if not result.groups:
        file.write(f"no crash reports under {result.folder}\n")
        return
    lines = [f"{'COUNT':>5}  {'FIRST SEEN':<19}  {'LAST SEEN':<19}  {'GROUP':<16}  CRASH"]
    for group in result.groups:
        key = group.fingerprint
        lines.append(
            f"{group.count:>5}  {_when(group.first_seen):<19}  {_when(group.last_seen):<19}  "
            f"{key.hash:<16}  {key.title}"
        )
        lines.append(f"{'':>5}  representative: {group.representative}")
    file.write("\n".join(lines) + "\n")


def to_json(result: CrashGroups) -> dict[str, Any]:
    return document(
        FORMAT,
        FORMAT_VERSION,
        {
            "folder": result.folder,
            "reports": result.reports,
            "duplicates": result.duplicates,
            "groups": [_group(group) for group in result.groups],
            "not_read": [{"path": path, "reason": why} for path, why in result.not_read],
        },
    )


def summary(result: CrashGroups) -> str:
    """One status line: how many reports, groups, duplicates and unreadable files."""
    text = (
        f"{_count(result.reports, 'crash report')} in {_count(len(result.groups), 'group')} "
        f"from {result.folder}"
    )
    if result.duplicates:
        text += f"; {result.duplicates:,} duplicates of the same incident counted once"
    if result.not_read:
        path, why = result.not_read[0]
        text += f"; {_count(len(result.not_read), 'file')} not read (first: {path}: {why})"
    return text


def _count(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _when(value: str | None) -> str:
    if not value:
        return "-"
    return value.replace("T", " ")[:19]


def _group(group: CrashGroup) -> dict[str, Any]:
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
