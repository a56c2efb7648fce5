"""``hawkwatch jetsam FILE``: who iOS killed for memory, and the app's memory limit."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from hawkwatch.formats.jetsam import read_jetsam
from hawkwatch.model.jetsam import JetsamEvent, JetsamProcess


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="FILE", help="a JetsamEvent .ips file (bug_type 298)")
    parser.add_argument(
        "--app",
        metavar="NAME|UUID",
        help="the app's process name or main-image UUID (default: the process killed at its "
        "per-process limit, preferring the frontmost one)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")


def run(args: argparse.Namespace) -> int:
    parsed = read_jetsam(args.path)
    event = parsed.value
    app = event.app(args.app)
    if args.json:
        sys.stdout.write(json.dumps(_as_json(event, app), indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(_as_text(event, app, args.app))
    if parsed.skipped:
        first = parsed.skipped[0]
        print(f"warning: {len(parsed.skipped)} problem(s), first: {first.reason}", file=sys.stderr)
    if args.app and app is None:
        print(f"hawkwatch: no process named {args.app!r} in {args.path}", file=sys.stderr)
        return 1
    return 0


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


def _as_text(event: JetsamEvent, app: JetsamProcess | None, asked: str | None) -> str:
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
        lines.append("app:             not found" + (f" ({asked})" if asked else ""))
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
    return "\n".join(lines) + "\n"


def _process_json(event: JetsamEvent, process: JetsamProcess | None) -> dict[str, Any] | None:
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


def _as_json(event: JetsamEvent, app: JetsamProcess | None) -> dict[str, Any]:
    return {
        "incident_id": event.incident_id,
        "timestamp": event.timestamp,
        "os_version": event.os_version,
        "product": event.product,
        "page_size": event.page_size,
        "app": _process_json(event, app),
        "largest_process": _process_json(event, event.largest),
        "killed": [_process_json(event, p) for p in event.processes if p.killed],
        "process_count": len(event.processes),
        "memory_pages": event.memory_pages,
    }
