"""A JetsamEvent: which processes the kernel killed for memory, and what they held.

Filled by ``formats.jetsam`` from ``JetsamEvent-*.ips`` (``bug_type`` 298). Page counts are
converted to bytes with the event's own page size (4,096 or 16,384).
"""

from __future__ import annotations

from dataclasses import dataclass, field

PER_PROCESS_LIMIT = "per-process-limit"


@dataclass(frozen=True, slots=True)
class JetsamProcess:
    """One process entry; ``reason`` is set only on processes the kernel killed."""

    name: str
    pid: int | None = None
    uuid: str | None = None
    states: tuple[str, ...] = ()
    rpages: int | None = None
    lifetime_max: int | None = None
    reason: str | None = None
    footprint_bytes: int | None = None
    peak_bytes: int | None = None

    @property
    def killed(self) -> bool:
        return self.reason is not None

    @property
    def debug_id(self) -> str | None:
        return self.uuid.replace("-", "").lower() if self.uuid else None


@dataclass(frozen=True, slots=True)
class JetsamEvent:
    """The whole event: device, memory state and every process listed."""

    incident_id: str | None = None
    timestamp: str | None = None
    os_version: str | None = None
    product: str | None = None
    page_size: int | None = None
    largest_process: str | None = None
    memory_pages: dict[str, int] = field(default_factory=dict)
    processes: tuple[JetsamProcess, ...] = ()

    def find(self, name_or_uuid: str) -> JetsamProcess | None:
        """The process with this UUID (any case, dashes or not) or, failing that, this name."""
        wanted = name_or_uuid.replace("-", "").lower()
        for process in self.processes:
            if process.debug_id == wanted:
                return process
        # names are cut to 32 characters by the kernel
        for process in self.processes:
            if process.name in (name_or_uuid, name_or_uuid[:32]):
                return process
        return None

    def app(self, name_or_uuid: str | None = None) -> JetsamProcess | None:
        """The app this event is about: the one asked for, else the likeliest victim.

        Without a name: a frontmost process killed at its per-process limit, then any process
        killed at its limit, then the frontmost process, then any killed process.
        """
        if name_or_uuid:
            return self.find(name_or_uuid)
        at_limit = [p for p in self.processes if p.reason == PER_PROCESS_LIMIT]
        frontmost = [p for p in self.processes if "frontmost" in p.states]
        for candidates in (
            [p for p in at_limit if p in frontmost],
            at_limit,
            frontmost,
            [p for p in self.processes if p.killed],
        ):
            if candidates:
                return max(candidates, key=lambda p: p.footprint_bytes or 0)
        return None

    @property
    def largest(self) -> JetsamProcess | None:
        """The entry named by ``largestProcess``, else the one with the largest footprint."""
        if self.largest_process:
            named = self.find(self.largest_process)
            if named is not None:
                return named
        sized = [p for p in self.processes if p.footprint_bytes is not None]
        return max(sized, key=lambda p: p.footprint_bytes or 0) if sized else None

    def memory_limit_bytes(self, process: JetsamProcess) -> int | None:
        """A process's memory limit: its footprint when it was killed at ``per-process-limit``."""
        return process.footprint_bytes if process.reason == PER_PROCESS_LIMIT else None
