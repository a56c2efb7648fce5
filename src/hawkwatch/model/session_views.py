"""What the session views draw (timeline, flame graph, network waterfall), as bounded plain data.

Part of ``SessionReport`` (fields ``timeline``, ``flame``, ``network``) so that the JSON twin of
the report is all the HTML report and the dashboard's session page need. Everything here is
capped so one report stays small: series are downsampled to ``MAX_SERIES_POINTS`` points, lists
keep their full count beside them (``*_total``), the flame graph keeps the frames that hold at
least ``FlameGraph.min_share`` of the samples. Offsets are seconds since the session start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

MAX_SERIES_POINTS: Final = 2000
MAX_MARKS: Final = 500
MAX_STACK_FRAMES: Final = 40


@dataclass(frozen=True, slots=True)
class SeriesPoints:
    """One sampled series on the time axis: ``offsets_s[i]`` → ``values[i]`` (each value holds
    until the next). Downsampled by keeping, per slice, the samples at the slice's min and max."""

    collection: str
    label: str
    unit: str
    offsets_s: tuple[float, ...]
    values: tuple[float, ...]
    count: int


@dataclass(frozen=True, slots=True)
class StallMark:
    """One stall on the time axis with its blocking stack (innermost first, ``func (file:line)``);
    ``blocking`` indexes the blocking frame in ``stack``."""

    offset_s: float
    duration_ms: float
    thread: str | None
    loop: str | None
    frame: str | None
    stack: tuple[str, ...]
    blocking: int = 0
    source: str | None = None


@dataclass(frozen=True, slots=True)
class PauseMark:
    """One GC pause on the time axis."""

    offset_s: float
    duration_ms: float
    generation: int


@dataclass(frozen=True, slots=True)
class SpanMark:
    """One span on the time axis."""

    name: str
    offset_s: float
    duration_ms: float
    thread: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class EventMark:
    """One event on the time axis."""

    name: str
    offset_s: float
    extra: str | None = None


@dataclass(frozen=True, slots=True)
class CrashMark:
    """One crash on the time axis."""

    title: str
    offset_s: float
    fatal: bool


@dataclass(frozen=True, slots=True)
class Timeline:
    """Everything the timeline draws on one axis, 0 … ``duration_s``; lists longest/earliest kept
    up to ``MAX_MARKS`` (``*_total`` in all)."""

    duration_s: float
    series: tuple[SeriesPoints, ...]
    stalls: tuple[StallMark, ...]
    stalls_total: int
    gc_pauses: tuple[PauseMark, ...]
    gc_pauses_total: int
    spans: tuple[SpanMark, ...]
    spans_total: int
    events: tuple[EventMark, ...]
    events_total: int
    crashes: tuple[CrashMark, ...]
    exit_offset_s: float | None = None


@dataclass(frozen=True, slots=True)
class FlameGraph:
    """A CPU call tree, pruned: ``nodes`` are ``(parent, frame, count)`` in pre-order (parent -1
    for roots, an index into ``nodes``; frame an index into ``frames``, labels as ``frame_label``
    gives). Subtrees below ``min_share`` of ``total`` samples are left out (``pruned`` of them)."""

    mode: str
    sampler: str
    total: int
    interval_s: float
    frames: tuple[str, ...]
    nodes: tuple[tuple[int, int, int], ...]
    pruned: int
    min_share: float
    source: str = ""


@dataclass(frozen=True, slots=True)
class RequestBar:
    """One HTTP request of the waterfall: phases in ms (None: did not happen or unobserved)."""

    offset_s: float
    method: str
    url: str
    host: str
    status: int | None
    error: str | None
    total_ms: float | None
    dns_ms: float | None
    connect_ms: float | None
    tls_ms: float | None
    send_ms: float | None
    ttfb_ms: float | None
    receive_ms: float | None
    response_bytes: int | None = None
    reused: bool | None = None
    on_loop_thread: bool = False


@dataclass(frozen=True, slots=True)
class NetworkWaterfall:
    """The session's requests in start order (the first ``MAX_MARKS``; ``total`` in all)."""

    requests: tuple[RequestBar, ...]
    total: int
    failed: int
