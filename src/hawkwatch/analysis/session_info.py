"""Who ran, when and for how long: ``session.json`` and the session's time span → SessionInfo."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any, Final

from hawkwatch.model.report import MetadataEntry, SessionInfo, SessionSource

#: ``session.json`` keys shown in their own SessionInfo fields (the rest go to ``details``).
_SHOWN: Final = frozenset(
    {
        "format",
        "format_version",
        "start_time",
        "app_name",
        "app_version",
        "pid",
        "python_implementation",
        "python_version",
        "platform",
        "hostname",
        "argv",
        "hawkwatch_version",
    }
)


def build_session_info(
    metadata: Mapping[str, Any],
    *,
    name: str,
    source: SessionSource,
    start: float | None,
    end: float | None,
    record_count: int,
) -> SessionInfo:
    def text(key: str) -> str | None:
        value = metadata.get(key)
        return value if isinstance(value, str) and value else None

    pid = metadata.get("pid")
    python = " ".join(
        part for part in (text("python_implementation"), text("python_version")) if part
    )
    argv = metadata.get("argv")
    command = (
        shlex.join(argv)
        if isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)
        else None
    )
    details = [
        entry
        for key, value in metadata.items()
        if key not in _SHOWN
        for entry in _flatten(str(key), value)
    ]
    return SessionInfo(
        name=name,
        source=source,
        start_time=start,
        end_time=end,
        duration_s=None if start is None or end is None else end - start,
        record_count=record_count,
        app_name=text("app_name"),
        app_version=text("app_version"),
        pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
        python=python or None,
        platform=text("platform"),
        hostname=text("hostname"),
        command=command,
        hawkwatch_version=text("hawkwatch_version"),
        details=tuple(sorted(details)),
    )


def _flatten(key: str, value: Any, depth: int = 0) -> list[MetadataEntry]:
    """Nested objects become dotted keys (three levels deep); other values compact JSON."""
    if isinstance(value, Mapping) and depth < 3:
        return [entry for k, v in value.items() for entry in _flatten(f"{key}.{k}", v, depth + 1)]
    if value is None:
        return []
    if isinstance(value, str):
        return [MetadataEntry(key, value)]
    try:
        shown = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    except (ValueError, RecursionError):
        shown = "(too deeply nested to show)"
    return [MetadataEntry(key, shown)]
