"""The report's stall section: ``anr`` and ``hang-kill`` records → ``StallSummary`` (pure).

``anr`` records split into ``<t>_<i>`` parts are merged as MTHawkeye's ``readANRRecords`` does
(``model.records.merge_parts``); a record that points to a side file counts with what the
record itself says. Stalls are grouped by the fingerprint of their point stack
(``analysis.stall``). hawkwatch's records carry Python frames; MTHawkeye's carry
``stackframes`` address strings, grouped by their ``titleframe`` address.

Reading source lines is I/O, so the caller passes ``read_line`` (the CLI passes
``linecache.getline``); without it, groups have no ``source_line``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hawkwatch.analysis.series import offset
from hawkwatch.analysis.stall import Sample, fingerprint, percentile, point_stack
from hawkwatch.model.records import Anr, AnrStall, HangKill, merge_parts
from hawkwatch.model.records.stall import stack_of
from hawkwatch.model.report import HangKillRow, StallGroup, StallRow, StallSummary
from hawkwatch.model.stack import PyFrame, Stack

ReadLine = Callable[[str, int], str]


class _Stall:
    __slots__ = ("fingerprint", "frame", "merged")

    def __init__(self, merged: AnrStall) -> None:
        self.merged = merged
        self.fingerprint = ""
        self.frame: PyFrame | None = None

    @property
    def head(self) -> Anr:
        return self.merged.head


def summarize_stalls(
    anr: Sequence[tuple[str, Anr]],
    hang_kills: Sequence[HangKill],
    start: float | None,
    *,
    max_rows: int = 10,
    read_line: ReadLine | None = None,
) -> StallSummary | None:
    """Count, total, p50/p95/max and groups of the stalls; None when there are none.

    ``anr`` holds ``(key, part)`` pairs as decoded (``DecodedRecords.keyed(Anr)``).
    """
    stalls = [_Stall(merged) for merged in merge_parts(anr)]
    if not stalls and not hang_kills:
        return None
    full: dict[str, tuple[str, PyFrame | None]] = {}
    for stall in stalls:
        stall.fingerprint, stall.frame = _blocking(stall.merged)
        if stall.frame is not None:
            full[stall.merged.key] = (stall.fingerprint, stall.frame)
    for stall in stalls:  # back-off records point to the last full record
        ref = stall.head.repeat_of
        if stall.frame is None and ref is not None:
            stall.fingerprint, stall.frame = full.get(
                ref.rsplit("_", 1)[0], (stall.fingerprint, None)
            )
    durations = [s.merged.duration_ms for s in stalls]
    return StallSummary(
        count=len(stalls),
        total_ms=sum(durations),
        p50_ms=percentile(durations, 0.5),
        p95_ms=percentile(durations, 0.95),
        max_ms=max(durations, default=0.0),
        groups=_groups(stalls, read_line)[:max_rows],
        longest=tuple(
            _row(s, start) for s in sorted(stalls, key=lambda s: -s.merged.duration_ms)[:max_rows]
        ),
        hang_kills=tuple(_hang_kill(kill) for kill in hang_kills[:max_rows]),
    )


def _blocking(stall: AnrStall) -> tuple[str, PyFrame | None]:
    """(fingerprint, blocking frame) of a stall: its point stack, else Matrix's rule now."""
    key, stack, index = blocking_stack(stall)
    return key, stack[index] if stack else None


def blocking_stack(stall: AnrStall) -> tuple[str, Stack, int]:
    """(fingerprint, blocking stack innermost first, index of the blocking frame in it).

    The point stack when the agent recorded one, else Matrix's rule applied now; MTHawkeye's
    address samples give a one-frame stack of the title address. Empty stack: none known.
    """
    head = stall.head
    point = head.point
    if point is not None and point.frames:
        stack = tuple(PyFrame(f.func, f.file, f.line) for f in point.frames)
        index = point.title if 0 <= point.title < len(stack) else 0
        return head.fingerprint or fingerprint(stack), stack, index
    samples: list[Sample] = []
    titles: list[int] = []
    for entry in stall.stacks:
        if entry.frames is None:
            if entry.stackframes is not None:  # MTHawkeye
                title = str(entry.titleframe or "")
                return title, ((PyFrame(title, "", 0),) if title else ()), 0
            continue
        stack = stack_of(entry.frames)
        samples.append(Sample(0.0, stack, entry.captured))
        titles.append(entry.titleframe if isinstance(entry.titleframe, int) else 0)
    chosen = point_stack(samples)
    if chosen is None:
        return head.fingerprint or "", (), 0
    index = titles[chosen.position] if 0 <= titles[chosen.position] < len(chosen.stack) else 0
    return fingerprint(chosen.stack), chosen.stack, index


def _groups(stalls: list[_Stall], read_line: ReadLine | None) -> tuple[StallGroup, ...]:
    by_print: dict[str, list[_Stall]] = {}
    for stall in stalls:
        by_print.setdefault(stall.fingerprint, []).append(stall)
    groups = []
    for key, members in by_print.items():
        longest = max(members, key=lambda s: s.merged.duration_ms)
        framed = [s for s in members if s.frame is not None]
        frame = max(framed, key=lambda s: s.merged.duration_ms).frame if framed else None
        source = None
        if frame is not None and read_line is not None and frame.file and frame.line > 0:
            text = read_line(frame.file, frame.line).strip()
            source = text or None
        groups.append(
            StallGroup(
                fingerprint=key,
                count=len(members),
                total_ms=sum(s.merged.duration_ms for s in members),
                max_ms=longest.merged.duration_ms,
                loop=longest.head.loop,
                frame=frame.text if frame is not None else "(no stack)",
                file=frame.file if frame is not None else None,
                line=frame.line if frame is not None else None,
                source_line=source,
            )
        )
    groups.sort(key=lambda g: (-g.total_ms, g.fingerprint))
    return tuple(groups)


def _row(stall: _Stall, start: float | None) -> StallRow:
    head = stall.head
    return StallRow(
        time=stall.merged.start,
        offset_s=offset(stall.merged.start, start),
        duration_ms=stall.merged.duration_ms,
        loop=head.loop,
        thread=head.thread,
        frame=stall.frame.text if stall.frame is not None else None,
        gc_ms=head.gc.duration_ms if head.gc is not None else None,
        source=head.source,
    )


def _hang_kill(kill: HangKill) -> HangKillRow:
    stack = kill.stack or kill.backstop_stack or ()
    return HangKillRow(
        time=kill.time,
        previous_session=kill.previous_session,
        duration_ms=kill.duration_ms,
        loop=kill.loop,
        frame=stack_of(stack[:1])[0].text if stack else None,
        source=kill.source,
    )
