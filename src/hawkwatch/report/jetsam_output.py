"""``JetsamResult`` (``hawkwatch jetsam``) as text and as JSON (``hawkwatch-jetsam``)."""

from __future__ import annotations

from typing import Any, Final, TextIO

from hawkwatch.api.jetsam import JetsamResult
from hawkwatch.model.jetsam import JetsamEvent, JetsamProcess
from hawkwatch.report._json import document

FORMAT: Final = "hawkwatch-jetsam"
FORMAT_VERSION: Final = 1


def render_text(result: JetsamResult, file: TextIO) -> None:
    event, app = result.event, result.app
    lines = [
        "JetsamEvent "
        + " · ".join(
            part
            for part in (
                event.timestamp,
                event.os_version,
                event.product,
                f"page size {event.page_size:,} B" if event.page_size else None,
            )
            if part
        )
    ]
    if app is None:
        lines.append("app:             not found" + (f" ({result.asked})" if result.asked else ""))
    else:
        lines.append(f"app:             {_describe(app)}")
        lines.append(f"reason:          {app.reason or 'not killed'}")
        limit = event.memory_limit_bytes(app)
        if limit is not None and app.rpages is not None:
            pages = f"{app.rpages:,} pages × {event.page_size or 0:,} B"
            lines.append(f"memory limit:    {_mib(limit)} = {pages}")
        else:
            lines.append(f"footprint:       {_mib(app.footprint_bytes)} (limit not reached)")
        if app.peak_bytes is not None:
            lines.append(f"lifetime peak:   {_mib(app.peak_bytes)}")
    largest = event.largest
    if largest is not None:
        lines.append(f"largest process: {_describe(largest)}, {_mib(largest.footprint_bytes)}")
    killed = [process for process in event.processes if process.killed]
    lines.append(f"killed:          {len(killed)} of {len(event.processes)} processes")
    lines.extend(
        f"  {process.reason:<22} {_describe(process)}, {_mib(process.footprint_bytes)}"
        for process in killed
    )
    file.write("\n".join(lines) + "\n")


def to_json(result: JetsamResult) -> dict[str, Any]:
    event = result.event
    return document(
        FORMAT,
        FORMAT_VERSION,
        {
            "incident_id": event.incident_id,
            "timestamp": event.timestamp,
            "os_version": event.os_version,
            "product": event.product,
            "page_size": event.page_size,
            "app": _process(event, result.app),
            "largest_process": _process(event, event.largest),
            "killed": [_process(event, p) for p in event.processes if p.killed],
            "process_count": len(event.processes),
            "memory_pages": event.memory_pages,
        },
    )


def _mib(value: int | None) -> str:
    if value is None:
        return "?"
    return f"{value:,} B ({value / 2**20:,.1f} MiB)"


def _describe(process: JetsamProcess) -> str:
    text = process.name
    if process.pid is not None:
        text += f" [{process.pid}]"
    if process.states:
        text += f" ({', '.join(process.states)})"
    return text


def _process(event: JetsamEvent, process: JetsamProcess | None) -> dict[str, Any] | None:
    if process is None:
        return None
    return {
        "name": process.name,
        "pid": process.pid,
        "uuid": process.uuid,
        "states": list(process.states),
        "reason": process.reason,
        "rpages": process.rpages,
        "footprint_bytes": process.footprint_bytes,
        "peak_bytes": process.peak_bytes,
        "memory_limit_bytes": event.memory_limit_bytes(process),
    }
