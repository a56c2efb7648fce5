"""Hang kills of earlier sessions: their markers and backstop dumps claimed and read into
``hang-kill`` records. Imported only when an earlier session left one (``stall_files``): the
typed model is not loaded at every start to find nothing.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import msgspec

from hawkwatch.agent.plugins.stall_files import MAX_DUMP_BYTES, REPORTED_SUFFIX, WATCHED_NAME
from hawkwatch.model.records import HangKill, StackFrame
from hawkwatch.model.records.stall import frames_of
from hawkwatch.model.stack import Stack
from hawkwatch.store import Session
from hawkwatch.store._files import read_regular, read_regular_text


def claim_hang_kills(
    session: Session, markers: list[Path], backstop: Path | None
) -> list[HangKill]:
    """``hang-kill`` values of a dead process's markers and its backstop dump, claimed."""
    found: list[HangKill] = []
    watched = _read_watched(session.path / WATCHED_NAME)
    dump = _claim_dump(backstop) if backstop is not None else None
    for marker in markers:
        info = _claim_marker(marker)
        if info is not None:
            found.append(_from_marker(session, info, dump))
            dump = None
    if dump is not None:
        found.append(_from_dump(session, dump, watched))
    return found


def _claim(path: Path) -> Path | None:
    claimed = path.with_name(path.name + REPORTED_SUFFIX)
    try:
        os.rename(path, claimed)
    except OSError:
        return None
    return claimed


class _Marker(msgspec.Struct, frozen=True):
    """A ``hang-<thread id>.json`` marker as ``write_marker`` writes it (times: Unix s)."""

    pid: int | None = None
    start: float = 0.0
    last_seen: float = 0.0
    thread: str | None = None
    thread_id: int | None = None
    loop: str | None = None
    stack: tuple[StackFrame, ...] = ()


def _claim_marker(path: Path) -> _Marker | None:
    """The marker, claimed; one that does not decode still says that a process hung."""
    claimed = _claim(path)
    if claimed is None:
        return None
    try:
        return msgspec.json.decode(claimed.read_bytes(), type=_Marker)
    except (OSError, msgspec.DecodeError):
        return _Marker()


def _claim_dump(path: Path) -> tuple[float, dict[int, Stack]] | None:
    claimed = _claim(path)
    if claimed is None:
        return None
    try:
        text = read_regular(claimed, MAX_DUMP_BYTES).decode("utf-8", "replace")
        when = claimed.stat().st_mtime
    except OSError:
        return None
    from hawkwatch.analysis.stall import parse_faulthandler  # only with a dump to read

    return when, parse_faulthandler(text)


class _Watched(msgspec.Struct, frozen=True):
    """One entry of ``stall-watched.json`` (``write_watched``)."""

    loop: str | None = None
    thread: str | None = None


def _read_watched(path: Path) -> dict[str, _Watched]:
    """Watched loop threads by thread id (text); empty when the file is missing or unreadable."""
    try:
        return msgspec.json.decode(read_regular_text(path), type=dict[str, _Watched])
    except (OSError, ValueError, msgspec.DecodeError):
        return {}


def _from_marker(
    session: Session, info: _Marker, dump: tuple[float, dict[int, Stack]] | None
) -> HangKill:
    last_seen = info.last_seen or info.start
    backstop = None
    if dump is not None and info.thread_id in dump[1]:
        backstop = frames_of(dump[1][info.thread_id])
    return HangKill(
        previous_session=session.name,
        pid=info.pid,
        source="marker",
        start=info.start,
        last_seen=last_seen,
        duration_ms=round(max(0.0, last_seen - info.start) * 1000, 3),
        thread=info.thread,
        thread_id=info.thread_id,
        loop=info.loop,
        stack=info.stack,
        backstop_stack=backstop,
        time=round(last_seen or time.time(), 6),
    )


def _from_dump(
    session: Session, dump: tuple[float, dict[int, Stack]], watched: dict[str, _Watched]
) -> HangKill:
    when, stacks = dump
    chosen = next((int(k) for k in watched if k.isdigit() and int(k) in stacks), None)
    if chosen is None and stacks:
        chosen = next(iter(stacks))
    about = watched.get(str(chosen), _Watched())
    pid = session.metadata.get("pid")
    return HangKill(
        previous_session=session.name,
        pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
        source="faulthandler",
        start=None,
        last_seen=when,
        duration_ms=None,
        thread=about.thread,
        thread_id=chosen,
        loop=about.loop,
        stack=frames_of(stacks.get(chosen, ())) if chosen is not None else (),
        time=round(when or time.time(), 6),
    )
