"""Resource sampling: ``mem``, ``r-mem``, ``avl-mem``, ``cpu``, ``threads-count``.

Every ``resources.interval_s`` (0.5 s, MTHawkeye's status cadence) on the scheduler thread; a
value is stored only when its formatted text changed since the last stored one, as MTHawkeye does
by default (``statusFlushKeepRedundantRecords = NO``). CPU is the process's user + system time
over the interval divided by the wall time, so a process busy on three cores shows ~300.
"""

from __future__ import annotations

import time

from hawkwatch.agent.monitor import AgentContext
from hawkwatch.model.plain_records import PlainScalar, series

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import ClassVar

    from hawkwatch.agent.sysinfo import ResourceReader, ResourceSample

MB = 1024 * 1024


class ResourcesMonitor:
    name: ClassVar[str] = "resources"

    def __init__(self) -> None:
        self._ctx: AgentContext | None = None
        self._reader: ResourceReader | None = None
        self._last_text: dict[str, bytes] = {}
        self._last_cpu: tuple[float, float] | None = None  # (monotonic s, cpu s)

    def start(self, ctx: AgentContext) -> None:
        self._ctx = ctx
        ctx.defer(self._first_sample, self)  # finding the memory limit need not delay the start

    def _first_sample(self) -> None:
        """Find the platform's reader and limits, note them in ``session.json``, sample once."""
        from hawkwatch.agent.sysinfo import reader_for_this_process  # psutil: only when used

        ctx = self._ctx
        if ctx is None:
            return
        self._reader = reader_for_this_process()
        ctx.session.update_metadata(
            "resources",
            {
                "footprint_source": self._reader.footprint_source,
                "available_memory_source": self._reader.available_source,
                "interval_s": ctx.config.resources.interval_s,
            },
        )
        self.sample()
        ctx.every(ctx.config.resources.interval_s, self.sample, self)

    def sample(self) -> None:
        if self._ctx is None or self._reader is None:
            return
        reading = self._reader.read()
        now_mono, now = time.monotonic(), time.time()
        for record in self._records(reading, now, now_mono):
            text = record.encode_value()
            if self._last_text.get(record.collection) != text:
                self._last_text[record.collection] = text
                self._ctx.write(record)

    def _records(self, reading: ResourceSample, now: float, now_mono: float) -> list[PlainScalar]:
        """The series' values (the typed ``ResidentMemory``… bytes; ``model.plain_records``:
        written for the life of the process without loading the typed model)."""
        values = [
            series("ResidentMemory", now, reading.resident_bytes / MB),
            series("ThreadsCount", now, reading.threads),
        ]
        if reading.footprint_bytes is not None:
            values.append(series("Footprint", now, reading.footprint_bytes / MB))
        if reading.available_bytes is not None:
            values.append(series("AvailableMemory", now, reading.available_bytes / MB))
        previous, self._last_cpu = self._last_cpu, (now_mono, reading.cpu_seconds)
        if previous is not None and now_mono > previous[0]:
            percent = (reading.cpu_seconds - previous[1]) / (now_mono - previous[0]) * 100
            values.append(series("CpuUsage", now, max(percent, 0.0)))
        return values

    def stop(self) -> None:
        self._ctx = None

    def after_fork_child(self) -> None:
        self._ctx = None
