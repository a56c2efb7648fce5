"""The report's stall section: ``anr`` and ``hang-kill`` records → ``StallSummary`` (pure).

``anr`` records split into ``<t>_<i>`` parts are merged as MTHawkeye's ``readANRRecords`` does
(group by the text before the last ``_``, sum ``duration``, concatenate ``stacks``); a record
that points to a side file counts with what the record itself says. Stalls are grouped by the
fingerprint of their point stack (``analysis.stall``). hawkwatch's records carry Python frames;
MTHawkeye's carry ``stackframes`` address strings, grouped by their ``titleframe`` address.

Reading source lines is I/O, so the caller passes ``read_line`` (the CLI passes
``linecache.getline``); without it, groups have no ``source_line``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hawkwatch.analysis._values import (
    Findings,
    number_field,
    offset,
    optional_number,
    optional_text,
    parse_each,
    parse_number,
    parse_object,
)
from hawkwatch.analysis.stall import Sample, fingerprint, percentile, point_stack
from hawkwatch.model import Record
from hawkwatch.model.report import HangKillRow, StallGroup, StallRow, StallSummary
from hawkwatch.model.stack import PyFrame, stack_from_json

ReadLine = Callable[[str, int], str]


class _Stall:
    __slots__ = ("data", "duration_ms", "fingerprint", "frame", "key", "start")

    def __init__(self, key: str, start: float, duration_ms: float, data: dict[str, Any]) -> None:
        self.key = key
        self.start = start
        self.duration_ms = duration_ms
        self.data = data
        self.fingerprint = ""
        self.frame: PyFrame | None = None


def summarize_stalls(
    anr: list[Record],
    hang_kills: list[Record],
    start: float | None,
    findings: Findings,
    *,
    max_rows: int = 10,
    read_line: ReadLine | None = None,
) -> StallSummary | None:
    """Count, total, p50/p95/max and groups of the stalls; None when there are none."""
    stalls = _merge(anr, findings)
    kills = parse_each(hang_kills, findings, _hang_kill)
    if not stalls and not kills:
        return None
    full: dict[str, tuple[str, PyFrame | None]] = {}
    for stall in stalls:
        stall.fingerprint, stall.frame = _blocking(stall.data)
        if stall.frame is not None:
            full[stall.key] = (stall.fingerprint, stall.frame)
    for stall in stalls:  # back-off records point to the last full record
        ref = stall.data.get("repeat_of")
        if stall.frame is None and isinstance(ref, str):
            stall.fingerprint, stall.frame = full.get(
                ref.rsplit("_", 1)[0], (stall.fingerprint, None)
            )
    durations = [s.duration_ms for s in stalls]
    return StallSummary(
        count=len(stalls),
        total_ms=sum(durations),
        p50_ms=percentile(durations, 0.5),
        p95_ms=percentile(durations, 0.95),
        max_ms=max(durations, default=0.0),
        groups=_groups(stalls, read_line)[:max_rows],
        longest=tuple(
            _row(s, start) for s in sorted(stalls, key=lambda s: -s.duration_ms)[:max_rows]
        ),
        hang_kills=tuple(kills[:max_rows]),
    )


def _merge(records: list[Record], findings: Findings) -> list[_Stall]:
    parts: dict[str, list[tuple[Record, dict[str, Any]]]] = {}
    for record in records:
        try:
            data = parse_object(record.value)
        except ValueError as exc:
            findings.add(record, str(exc))
            continue
        parts.setdefault(record.key.rsplit("_", 1)[0], []).append((record, data))
    stalls: list[_Stall] = []
    for base, group in parts.items():
        head_record, head = group[0]
        try:
            duration = sum(number_field(data, "duration") for _, data in group)
            starts = [number_field(data, "startFrom") for _, data in group]
        except ValueError as exc:
            findings.add(head_record, str(exc))
            continue
        if duration < 0:
            findings.add(head_record, "negative 'duration'")
            continue
        merged = dict(head)
        merged["stacks"] = [stack for _, data in group for stack in _list(data.get("stacks"))]
        stalls.append(_Stall(base, min(starts), duration, merged))
    stalls.sort(key=lambda s: s.start)
    return stalls


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _blocking(data: dict[str, Any]) -> tuple[str, PyFrame | None]:
    """(fingerprint, blocking frame) of a stall: its point stack, else Matrix's rule now."""
    point = data.get("point")
    if isinstance(point, dict):
        try:
            stack = stack_from_json(point.get("frames"))
        except ValueError:
            stack = ()
        if stack:
            title = point.get("title")
            index = title if isinstance(title, int) and 0 <= title < len(stack) else 0
            given = data.get("fingerprint")
            return (given if isinstance(given, str) else fingerprint(stack)), stack[index]
    samples: list[Sample] = []
    titles: list[int] = []
    for entry in _list(data.get("stacks")):
        if not isinstance(entry, dict):
            continue
        frames = entry.get("frames")
        if frames is None and isinstance(entry.get("stackframes"), str):  # MTHawkeye
            title = str(entry.get("titleframe") or "")
            return title, PyFrame(title, "", 0) if title else None
        try:
            stack = stack_from_json(frames)
        except ValueError:
            continue
        count = entry.get("capturedCount")
        samples.append(Sample(0.0, stack, count if isinstance(count, int) and count > 0 else 1))
        title = entry.get("titleframe")
        titles.append(title if isinstance(title, int) else 0)
    chosen = point_stack(samples)
    if chosen is None:
        given = data.get("fingerprint")
        return (given if isinstance(given, str) else ""), None
    index = titles[chosen.position] if titles[chosen.position] < len(chosen.stack) else 0
    return fingerprint(chosen.stack), chosen.stack[index]


def _groups(stalls: list[_Stall], read_line: ReadLine | None) -> tuple[StallGroup, ...]:
    by_print: dict[str, list[_Stall]] = {}
    for stall in stalls:
        by_print.setdefault(stall.fingerprint, []).append(stall)
    groups = []
    for key, members in by_print.items():
        longest = max(members, key=lambda s: s.duration_ms)
        framed = [s for s in members if s.frame is not None]
        frame = max(framed, key=lambda s: s.duration_ms).frame if framed else None
        source = None
        if frame is not None and read_line is not None and frame.file and frame.line > 0:
            text = read_line(frame.file, frame.line).strip()
            source = text or None
        groups.append(
            StallGroup(
                fingerprint=key,
                count=len(members),
                total_ms=sum(s.duration_ms for s in members),
                max_ms=longest.duration_ms,
                loop=optional_text(longest.data, "loop"),
                frame=frame.text if frame is not None else "(no stack)",
                file=frame.file if frame is not None else None,
                line=frame.line if frame is not None else None,
                source_line=source,
            )
        )
    groups.sort(key=lambda g: (-g.total_ms, g.fingerprint))
    return tuple(groups)


def _row(stall: _Stall, start: float | None) -> StallRow:
    gc = stall.data.get("gc")
    gc_ms = None
    if isinstance(gc, dict):
        try:
            gc_ms = optional_number(gc, "duration_ms")
        except ValueError:
            gc_ms = None
    return StallRow(
        time=stall.start,
        offset_s=offset(stall.start, start),
        duration_ms=stall.duration_ms,
        loop=optional_text(stall.data, "loop"),
        thread=optional_text(stall.data, "thread"),
        frame=stall.frame.text if stall.frame is not None else None,
        gc_ms=gc_ms,
        source=optional_text(stall.data, "source"),
    )


def _hang_kill(record: Record) -> HangKillRow:
    data = parse_object(record.value)
    previous = data.get("previous_session")
    if not isinstance(previous, str):
        raise ValueError("missing text 'previous_session'")
    frame = None
    try:
        stack = stack_from_json(data.get("stack") or data.get("backstop_stack") or [])
    except ValueError:
        stack = ()
    if stack:
        frame = stack[0].text
    return HangKillRow(
        time=parse_number(record.key, "key"),
        previous_session=previous,
        duration_ms=optional_number(data, "duration_ms"),
        loop=optional_text(data, "loop"),
        frame=frame,
        source=optional_text(data, "source"),
    )
