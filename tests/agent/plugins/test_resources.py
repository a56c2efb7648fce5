"""Resource sampling in a real process: values appear, follow real allocations, store on change."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import hawkwatch
from hawkwatch.model import collections as c
from tests.builders import agent_records, wait_for

pytestmark = pytest.mark.usefixtures("stopped_agent")


def test_every_series_is_sampled_and_stored_only_on_change(hawkwatch_home: Path) -> None:
    hawkwatch.start(resources_interval_s=0.05, imports_enabled=False, gc_enabled=False)
    assert wait_for(lambda: len(agent_records(c.CPU)) >= 3)
    for collection in c.RESOURCE_SERIES:
        records = agent_records(collection)
        assert records, collection
        values = [r.value for r in records]
        assert all(a != b for a, b in itertools.pairwise(values)), collection
        keys = [float(r.key) for r in records]
        assert keys == sorted(keys)
    assert float(agent_records(c.MEMORY_RESIDENT)[0].value) > 5
    assert int(agent_records(c.THREADS_COUNT)[-1].value) >= 2  # main + scheduler
    assert float(agent_records(c.AVAILABLE_MEMORY)[-1].value) > 0


def test_an_allocation_shows_in_mem_and_r_mem(hawkwatch_home: Path) -> None:
    hawkwatch.start(resources_interval_s=0.05, imports_enabled=False, gc_enabled=False)
    assert wait_for(lambda: agent_records(c.RESIDENT_FOOTPRINT))
    before_rss = float(agent_records(c.MEMORY_RESIDENT)[-1].value)
    before_footprint = float(agent_records(c.RESIDENT_FOOTPRINT)[-1].value)
    block = bytearray(120 * 1024 * 1024)  # zero-filled: every page is touched
    try:
        assert wait_for(
            lambda: float(agent_records(c.RESIDENT_FOOTPRINT)[-1].value) > before_footprint + 100
        )
        assert float(agent_records(c.MEMORY_RESIDENT)[-1].value) > before_rss + 100
    finally:
        del block
