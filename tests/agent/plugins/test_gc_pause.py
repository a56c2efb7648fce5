"""Garbage-collection pauses over the threshold are recorded with their generation and thread."""

from __future__ import annotations

import gc
import json
import threading
from pathlib import Path

import pytest

import hawkwatch
from hawkwatch.model import collections as c
from tests.builders import agent_records, wait_for

pytestmark = pytest.mark.usefixtures("stopped_agent")


def test_a_full_collection_over_the_threshold_is_recorded(hawkwatch_home: Path) -> None:
    hawkwatch.start(gc_threshold_ms=0.0, resources_enabled=False, imports_enabled=False)
    # no automatic collection (an agent thread's allocations can start one) takes any of the
    # cycles before the explicit one: it must find all of them
    gc.disable()
    try:
        garbage = []
        for _ in range(50_000):  # reference cycles the collector must find
            node: list[object] = []
            node.append(node)
            garbage.append(node)
        del garbage, node

        def collect_in_thread() -> None:
            gc.collect()

        worker = threading.Thread(target=collect_in_thread, name="collector-thread")
        worker.start()
        worker.join()
    finally:
        gc.enable()

    assert wait_for(lambda: agent_records(c.GC_PAUSE))
    pauses = [json.loads(r.value) for r in agent_records(c.GC_PAUSE)]
    full = [p for p in pauses if p["thread"] == "collector-thread"]
    assert full, pauses
    assert full[-1]["generation"] == 2
    assert full[-1]["collected"] >= 50_000
    assert full[-1]["duration_ms"] > 0


def test_short_pauses_under_the_threshold_are_not_recorded(hawkwatch_home: Path) -> None:
    hawkwatch.start(gc_threshold_ms=10_000.0, resources_enabled=False, imports_enabled=False)
    for _ in range(5):
        gc.collect()
    hawkwatch.event("marker")  # written after any pause record would have been
    assert agent_records(c.GC_PAUSE) == []


def test_stop_removes_the_gc_hook(hawkwatch_home: Path) -> None:
    before = list(gc.callbacks)
    hawkwatch.start(resources_enabled=False, imports_enabled=False, stall_enabled=False)
    assert len(gc.callbacks) == len(before) + 1
    hawkwatch.stop()
    assert gc.callbacks == before
