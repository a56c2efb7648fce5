"""The session report: what happened over one run, as plain data (no I/O).

Built by ``hawkwatch.analysis.session_report.build_session_report`` from a session's records,
for hawkwatch's own sessions and MTHawkeye folders alike; laid out by ``hawkwatch.report``.

Conventions: ``*_time`` and ``time`` are Unix seconds; ``offset_s`` is seconds since the session
start (None when the start is unknown); other durations carry their unit in the name. Lists that
are capped keep the full count beside them (``events_total``, ``errors_total``, …).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, NamedTuple

from hawkwatch.model.io_rows import IoIssueRow
from hawkwatch.model.memory_report import MemoryReport
from hawkwatch.model.session_views import FlameGraph, NetworkWaterfall, Timeline

REPORT_FORMAT: Final = "hawkwatch-report"
REPORT_VERSION: Final = 1
"""Bumped only for a change an old reader of the JSON twin would misread (added keys such as
the drawable views ``timeline``, ``flame`` and ``network`` are not one)."""

SessionSource = Literal["hawkwatch", "mthawkeye"]
LaunchLayout = Literal["hawkwatch", "mthawkeye"]


class MetadataEntry(NamedTuple):
    """One ``session.json`` entry not shown elsewhere; nested keys are joined with dots."""

    key: str
    value: str


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """Who ran, when, and for how long.

    ``end_time`` is the latest time found in the records (sample, event, span end, …), so
    ``duration_s`` is how long the session was observed, not necessarily how long it ran.
    """

    name: str
    source: SessionSource
    start_time: float | None
    end_time: float | None
    duration_s: float | None
    record_count: int
    app_name: str | None = None
    app_version: str | None = None
    pid: int | None = None
    python: str | None = None
    platform: str | None = None
    hostname: str | None = None
    command: str | None = None
    hawkwatch_version: str | None = None
    details: tuple[MetadataEntry, ...] = ()


@dataclass(frozen=True, slots=True)
class LaunchPhase:
    """One captured launch milestone.

    ``offset_ms`` is measured from the launch origin (the process start); ``delta_ms`` from the
    previous captured phase, so the deltas of a launch add up to the last phase's offset.
    """

    name: str
    label: str
    time: float
    offset_ms: float
    delta_ms: float


@dataclass(frozen=True, slots=True)
class LaunchBreakdown:
    """A launch split into phases, in time order, from hawkwatch's or MTHawkeye's fields.

    ``duration_ms`` is process start → ready (hawkwatch) or → end of
    ``didFinishLaunching`` (MTHawkeye); None when either end was not captured.
    ``not_captured`` lists the labels of the phases whose time was 0 or missing; ``end_label``
    names the phase the duration runs to.
    """

    layout: LaunchLayout
    origin_time: float
    duration_ms: float | None
    phases: tuple[LaunchPhase, ...]
    not_captured: tuple[str, ...] = ()
    end_label: str = "ready"


@dataclass(frozen=True, slots=True)
class SeriesStats:
    """Statistics of one sampled series (``r-mem``, ``cpu``, ``fps``, …).

    Samples are stored only when the value changes, so each sample is taken to hold until the
    next one and the last until the session end. ``mean`` and ``p95`` are weighted by that
    holding time (``p95``: the value not exceeded 95 % of the observed time); ``min`` and ``max``
    are over the stored samples. ``points`` are the time-weighted means of ``len(points)`` equal
    slices of ``first_time`` … session end, for a small chart; ``first_offset_s`` is where that
    chart starts, relative to the session start.
    """

    collection: str
    label: str
    unit: str
    count: int
    min: float
    mean: float
    p95: float
    max: float
    first_time: float
    last_time: float
    last: float
    points: tuple[float, ...]
    first_offset_s: float | None = None


@dataclass(frozen=True, slots=True)
class EventRow:
    """A ``custom-time-event``: lifecycle (``App::Start``, …) or the app's own."""

    time: float
    offset_s: float | None
    name: str
    extra: str | None = None


@dataclass(frozen=True, slots=True)
class SpanGroup:
    """All ``custom-span`` records of one name; ``p95_ms`` is the nearest-rank 95th percentile."""

    name: str
    count: int
    error_count: int
    total_ms: float
    mean_ms: float
    p95_ms: float
    max_ms: float


@dataclass(frozen=True, slots=True)
class SpanRow:
    """One span, as listed among the slowest."""

    name: str
    start_time: float
    offset_s: float | None
    duration_ms: float
    thread: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class SpanStats:
    """Spans grouped by name (largest total first; ``group_count`` names in all) and the slowest
    single spans."""

    count: int
    group_count: int
    groups: tuple[SpanGroup, ...]
    slowest: tuple[SpanRow, ...]


@dataclass(frozen=True, slots=True)
class GcGeneration:
    """Collections of one generation."""

    generation: int
    count: int
    total_ms: float
    max_ms: float


@dataclass(frozen=True, slots=True)
class GcPauseRow:
    """One recorded ``gc-pause``."""

    time: float
    offset_s: float | None
    generation: int
    duration_ms: float
    collected: int | None = None
    uncollectable: int | None = None
    thread: str | None = None


@dataclass(frozen=True, slots=True)
class GcPauseSummary:
    """The garbage-collector pauses recorded (only those over the monitor's threshold)."""

    count: int
    total_ms: float
    max_ms: float
    by_generation: tuple[GcGeneration, ...]
    worst: tuple[GcPauseRow, ...]


@dataclass(frozen=True, slots=True)
class ImportRow:
    """One recorded import, as ``python -X importtime`` would show it."""

    module: str
    cumulative_ms: float
    self_ms: float | None
    parent: str | None = None
    thread: str | None = None
    time: float | None = None


@dataclass(frozen=True, slots=True)
class ImportSummary:
    """The slowest imports by cumulative time, and how many were recorded in all."""

    count: int
    top: tuple[ImportRow, ...]


@dataclass(frozen=True, slots=True)
class ExitState:
    """How the process ended (the last ``exit-state`` record: the supervisor writes after the
    agent, so it wins when both wrote)."""

    time: float
    offset_s: float | None
    clean: bool
    exit_code: int | None
    signal: int | None
    source: str | None
    kind: str | None = None
    """How the process ended, in the exit vocabulary (``model.records.crash.EXIT_KINDS``)."""
    evidence: tuple[str, ...] = ()
    """What decided ``kind``."""


@dataclass(frozen=True, slots=True)
class CrashFrameRow:
    """One frame of a Python crash, with its source line when it was readable."""

    function: str
    file: str
    line: int
    source: str | None = None


@dataclass(frozen=True, slots=True)
class CrashThreadRow:
    name: str
    frames: tuple[CrashFrameRow, ...]


@dataclass(frozen=True, slots=True)
class BreadcrumbRow:
    time: float
    kind: str
    text: str


@dataclass(frozen=True, slots=True)
class CrashCauseRow:
    type: str
    message: str
    relation: str
    frames: tuple[CrashFrameRow, ...]


@dataclass(frozen=True, slots=True)
class CrashRow:
    """A ``crash`` record: an uncaught exception (``kind`` "exception") or a fatal signal
    ("signal"); frames innermost first."""

    kind: str
    fatal: bool
    type: str
    message: str
    thread: str
    frames: tuple[CrashFrameRow, ...]
    threads: tuple[CrashThreadRow, ...]
    fingerprint: str
    breadcrumbs: tuple[BreadcrumbRow, ...]
    time: float
    offset_s: float | None
    source: str
    title: str = ""
    causes: tuple[CrashCauseRow, ...] = ()


@dataclass(frozen=True, slots=True)
class ErrorRow:
    """A ``hawkwatch-error``: a monitor that failed and was stopped."""

    time: float
    offset_s: float | None
    plugin: str
    phase: str
    error: str
    traceback: str | None = None


@dataclass(frozen=True, slots=True)
class CollectionCount:
    """How many records a collection the report does not otherwise show holds."""

    name: str
    count: int


@dataclass(frozen=True, slots=True)
class Finding:
    """Records of one collection skipped for one reason (their first key, to find them)."""

    collection: str
    reason: str
    count: int
    first_key: str


@dataclass(frozen=True, slots=True)
class StallGroup:
    """Stalls whose point stacks share a fingerprint: one blocking place in the code."""

    fingerprint: str
    count: int
    total_ms: float
    max_ms: float
    loop: str | None
    frame: str
    """The blocking frame, ``func (file:line)``, of the group's longest stall."""
    file: str | None = None
    line: int | None = None
    source_line: str | None = None
    """The text of that line, read when the report was made (None when the file is gone)."""


@dataclass(frozen=True, slots=True)
class StallRow:
    """One stall (``anr`` record, parts merged)."""

    time: float
    offset_s: float | None
    duration_ms: float
    loop: str | None
    thread: str | None
    frame: str | None
    gc_ms: float | None = None
    source: str | None = None


@dataclass(frozen=True, slots=True)
class HangKillRow:
    """An earlier process that died while one of its loops was stalled."""

    time: float
    previous_session: str
    duration_ms: float | None
    loop: str | None
    frame: str | None
    source: str | None


@dataclass(frozen=True, slots=True)
class StallSummary:
    """Stalls of the session's event loops: how many, how long, and where they blocked."""

    count: int
    total_ms: float
    p50_ms: float
    p95_ms: float
    max_ms: float
    groups: tuple[StallGroup, ...]
    longest: tuple[StallRow, ...]
    hang_kills: tuple[HangKillRow, ...] = ()


@dataclass(frozen=True, slots=True)
class CpuFrameRow:
    """A frame among the costliest: percent of the samples that stopped in it (``self``) and
    that passed through it (``total``); ``self_low_percent`` … ``self_high_percent`` is the
    95 % binomial (Wilson) interval of the self share, from the number of samples."""

    frame: str
    self_percent: float
    total_percent: float
    self_low_percent: float = 0.0
    self_high_percent: float = 100.0


@dataclass(frozen=True, slots=True)
class HighLoadRow:
    """One ``cpu-highload`` episode; ``average_percent`` 100 = one core; ``threads`` are
    ``name share%`` texts, busiest first."""

    key: str
    time: float
    offset_s: float | None
    lasting_s: float
    average_percent: float
    samples: int
    top_frames: tuple[CpuFrameRow, ...]
    threads: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ProfilerSummary:
    """The continuous profiler's windows: samples, mean rate, its own CPU cost (percent of one
    core over the profiled time) and the costliest frames in cpu mode.

    ``samples`` counts the sampler's ticks; ``mode_samples`` the cpu-mode samples the shares
    are of. ``sampler`` says which sampler made the windows shown (``py-spy`` from outside the
    process, ``in-process``); py-spy's cost is not the program's, so ``cost_percent`` is 0."""

    windows: int
    samples: int
    duration_s: float
    rate_hz: float
    budget: float
    cost_percent: float
    top_frames: tuple[CpuFrameRow, ...]
    mode_samples: int = 0
    sampler: str = ""


@dataclass(frozen=True, slots=True)
class ShortBurn:
    """The longest CPU burn that stayed shorter than ``cpu.highload_min_duration_s`` (so it
    is not an episode): why a newcomer's burn shows nothing."""

    start_time: float
    lasting_s: float
    average_percent: float
    min_duration_s: float


@dataclass(frozen=True, slots=True)
class CpuSummary:
    """High-load episodes (``episodes_total`` in all; longest first) and the profiler summary;
    ``skipped`` counts CPU records or side files that could not be read; ``short_burn`` the
    longest burn too short to be an episode (None when there was none); ``outside_note`` one
    line saying py-spy could not sample (None when it did, or was not run)."""

    episodes: tuple[HighLoadRow, ...]
    episodes_total: int
    profiler: ProfilerSummary | None
    skipped: int = 0
    short_burn: ShortBurn | None = None
    outside_note: str | None = None


@dataclass(frozen=True, slots=True)
class SessionReport:
    """Everything ``hawkwatch report`` shows about one session.

    A section is None (or empty) when the session holds no records for it. ``findings`` are
    records whose values could not be used; ``skipped_lines`` are lines the store reader could
    not turn into records at all. ``timeline``, ``flame`` and ``network`` are what the session
    views draw (``model.session_views``).
    """

    session: SessionInfo
    launch: LaunchBreakdown | None
    resources: tuple[SeriesStats, ...]
    events: tuple[EventRow, ...]
    events_total: int
    spans: SpanStats | None
    gc: GcPauseSummary | None
    imports: ImportSummary | None
    exit: ExitState | None
    errors: tuple[ErrorRow, ...]
    errors_total: int
    other_collections: tuple[CollectionCount, ...]
    findings: tuple[Finding, ...]
    skipped_lines: int = 0
    stalls: StallSummary | None = None
    cpu: CpuSummary | None = None
    io_issues: tuple[IoIssueRow, ...] = ()
    crashes: tuple[CrashRow, ...] = ()
    memory: MemoryReport | None = None
    timeline: Timeline | None = None
    flame: FlameGraph | None = None
    network: NetworkWaterfall | None = None
