"""Sampled series: one number per time (MTHawkeye's ``r-mem``, ``cpu``, … and hawkwatch's ``mem``).

Units and sources are in ``docs/collections.md``; MTHawkeye writes the same shapes.
"""

from __future__ import annotations

from typing import ClassVar

from hawkwatch.model import collections as c
from hawkwatch.model.records._codec import ScalarRecord


class ResidentMemory(ScalarRecord, kw_only=True, frozen=True):
    """Resident set size, MB."""

    collection: ClassVar[str] = c.MEMORY_RESIDENT


class Footprint(ScalarRecord, kw_only=True, frozen=True):
    """Memory footprint (iOS ``phys_footprint``; Linux ``RssAnon + VmSwap``), MB."""

    collection: ClassVar[str] = c.RESIDENT_FOOTPRINT


class AvailableMemory(ScalarRecord, kw_only=True, frozen=True):
    """Memory the process can still allocate before its limit, MB."""

    collection: ClassVar[str] = c.AVAILABLE_MEMORY


class CpuUsage(ScalarRecord, kw_only=True, frozen=True):
    """Process CPU % over the interval, all threads (may exceed 100)."""

    collection: ClassVar[str] = c.CPU
    value_format: ClassVar[str] = "%.1f"


class ThreadsCount(ScalarRecord, kw_only=True, frozen=True):
    """Number of OS threads."""

    collection: ClassVar[str] = c.THREADS_COUNT
    value_format: ClassVar[str] = "%.0f"


class FrameRate(ScalarRecord, kw_only=True, frozen=True):
    """MTHawkeye's frames per second (iOS only)."""

    collection: ClassVar[str] = c.FPS


class GlFrameRate(ScalarRecord, kw_only=True, frozen=True):
    """MTHawkeye's OpenGL frames per second (iOS only)."""

    collection: ClassVar[str] = c.GL_FPS


SERIES_TYPES = (
    ResidentMemory,
    Footprint,
    AvailableMemory,
    CpuUsage,
    ThreadsCount,
    FrameRate,
    GlFrameRate,
)
