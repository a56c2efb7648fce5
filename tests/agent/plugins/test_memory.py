"""The memory monitor's parts on real allocations: tracemalloc snapshots into the live-allocation
model, leak suspects vs churn, function names, type counts and referrer paths, and the monitor
in a running agent (tracing on demand, the app's own tracemalloc left alone)."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import hawkwatch
from hawkwatch.agent.plugins.memory_objects import census, referrer_path
from hawkwatch.agent.plugins.memory_trace import AllocationTracer, FunctionNames
from hawkwatch.model import collections as c
from tests.builders import agent_records, wait_for

KEPT: list[bytes] = []
CALLBACKS: list[Callable[[], int]] = []


class Holder:
    items: list[object] = []  # noqa: RUF012 - the class attribute is the point


class Leaked:
    def __init__(self) -> None:
        self.data = bytearray(100)


def leak_into_global(i: int) -> None:
    KEPT.append(b"x" * 3000 + str(i).encode())


def churn(i: int) -> int:
    rows = [b"y" * 3000 + str(k).encode() for k in range(50)]
    return len(rows) + i


@pytest.fixture
def no_tracing() -> Iterator[None]:
    was = tracemalloc.is_tracing()
    yield
    if tracemalloc.is_tracing() and not was:
        tracemalloc.stop()
    KEPT.clear()
    CALLBACKS.clear()
    Holder.items.clear()


@pytest.mark.usefixtures("no_tracing")
def test_a_growing_stack_is_a_suspect_and_churn_is_not() -> None:
    tracer = AllocationTracer(nframes=8)
    tracer.start()
    assert tracer.owned and tracemalloc.is_tracing()
    for round_ in range(5):
        for i in range(40):
            leak_into_global(round_ * 40 + i)
            churn(i)
        tracer.snapshot(float(round_))
    suspects = tracer.suspects(min_snapshots=4)
    assert suspects, "the leak was not found"
    top = tracer.frames(suspects[0].key)
    assert top[0].func == "leak_into_global" and top[0].file == __file__
    assert suspects[0].grown == suspects[0].steps == 4
    assert suspects[0].growth >= 4 * 40 * 3000
    every_function = {f.func for s in suspects for f in tracer.frames(s.key)}
    assert "churn" not in every_function
    tracer.stop()
    assert not tracemalloc.is_tracing()


@pytest.mark.usefixtures("no_tracing")
def test_snapshots_share_one_table_and_leave_out_hawkwatch_itself() -> None:
    tracer = AllocationTracer(nframes=8)
    tracer.start()
    first = tracer.snapshot(0.0)
    leak_into_global(1)
    second = tracer.snapshot(1.0)
    assert first.stacks is second.stacks
    files = {f.file for g in second.groups for f in tracer.frames(g.stack_id)}
    assert not any("/hawkwatch/" in name and "/tests/" not in name for name in files), files
    assert second.position == 2 and second.time_s == 1.0


@pytest.mark.usefixtures("no_tracing")
def test_an_app_tracing_on_its_own_keeps_its_tracing() -> None:
    tracemalloc.start(3)
    tracer = AllocationTracer(nframes=8)
    tracer.start()
    assert not tracer.owned
    tracer.stop()
    assert tracemalloc.is_tracing() and tracemalloc.get_traceback_limit() == 3


def test_function_names_are_found_from_the_source(tmp_path: Path) -> None:
    source = tmp_path / "shapes.py"
    source.write_text(
        "x = 1\n"  # 1
        "class Box:\n"  # 2
        "    def grow(self):\n"  # 3
        "        def inner():\n"  # 4
        "            return 1\n"  # 5
        "        return inner\n"  # 6
        "@staticmethod\n"  # 7
        "def free():\n"  # 8
        "    pass\n"  # 9
    )
    names = FunctionNames()
    file = str(source)
    assert [names.name(file, n) for n in (1, 3, 5, 6, 7, 9)] == [
        "<module>",
        "Box.grow",
        "Box.grow.<locals>.inner",
        "Box.grow",
        "free",
        "free",
    ]
    assert names.name(str(tmp_path / "gone.py"), 3) == "<module>"


@pytest.mark.usefixtures("no_tracing")
def test_referrer_paths_end_at_the_module_global_class_attribute_and_callback_list() -> None:
    in_global = Leaked()
    KEPT.append(in_global)  # type: ignore[arg-type]
    in_class = Leaked()
    Holder.items.append(in_class)
    captured = Leaked()
    CALLBACKS.append(lambda: len(captured.data))
    module = __name__
    path, note = referrer_path(in_global, max_objects=500, budget_s=5)
    assert path[0] == f"module {module}" and path[1] == ".KEPT → list", (path, note)
    assert path[-1].endswith(f"→ {module}.Leaked")
    path, note = referrer_path(in_class, max_objects=500, budget_s=5)
    assert path[:3] == [f"class {module}.Holder", "__dict__ → dict", ".items → list"], (path, note)
    path, note = referrer_path(captured, max_objects=500, budget_s=5)
    assert path[:2] == [f"module {module}", ".CALLBACKS → list"], (path, note)
    assert path[-1] == f"cell → {module}.Leaked"


def test_an_object_held_only_by_the_caller_has_no_root_and_says_why() -> None:
    local_only = Leaked()
    path, note = referrer_path(local_only, max_objects=500, budget_s=5)
    assert path == [] and note


def test_the_search_stops_at_its_object_budget() -> None:
    chain: list[object] = [Leaked()]
    for _ in range(30):  # a long chain of lists, held at the end by a global
        chain = [chain]
    KEPT.append(chain)  # type: ignore[arg-type]
    innermost: object = chain
    for _ in range(31):
        innermost = innermost[0]  # type: ignore[index]
    path, note = referrer_path(innermost, max_objects=5, budget_s=5)
    KEPT.clear()
    assert path == [] and "5 objects" in note


def test_census_counts_types_and_picks_an_instance_that_outlived_a_census() -> None:
    name = f"{__name__}.Leaked"
    old = [Leaked() for _ in range(20)]
    first = census(5.0, {name: None})
    assert first.complete and first.counts[name] >= 20
    baseline = first.baselines[name]
    assert {id(o) for o in old} <= baseline and first.chosen == {}
    new = Leaked()
    second = census(5.0, {name: baseline})
    assert second.chosen == {}  # new, but it has not outlived a census interval yet
    third = census(5.0, {name: baseline}, planted=second.planted)
    assert third.chosen[name] is new
    del third, new


def test_census_picks_the_leak_not_a_bounded_caches_entries() -> None:
    """A bounded cache's entries are new and alive at every census, and reuse the addresses of
    the entries it let go (an id cannot tell them apart); a leak's entries outlive a census."""
    name = f"{__name__}.Leaked"
    bounded: list[Leaked] = []
    leaked: list[Leaked] = []

    def work(rounds: int) -> None:
        for i in range(rounds):
            bounded.append(Leaked())
            del bounded[:-5]
            if i % 10 == 0:
                leaked.append(Leaked())

    work(200)
    baseline = census(5.0, {name: None}).baselines[name]
    planted = None
    for _ in range(4):
        work(2000)
        found = census(5.0, {name: baseline}, planted=planted)
        planted = found.planted
        chosen = found.chosen.get(name)
        assert chosen is None or any(chosen is obj for obj in leaked), "a bounded entry"
        del chosen
    assert any(found.chosen[name] is obj for obj in leaked)
    del found


class NoWeakRef:
    __slots__ = ("n",)


def test_census_of_a_type_without_weak_references_picks_its_oldest_new_instance() -> None:
    name = f"{__name__}.NoWeakRef"
    baseline = census(5.0, {name: None}).baselines.get(name, frozenset())
    new = NoWeakRef()
    found = census(5.0, {name: baseline})
    assert found.chosen[name] is new and name not in found.planted
    del found, new


def test_census_gives_up_at_its_budget() -> None:
    ticks = iter(range(1_000_000))
    found = census(0.5, {}, clock=lambda: float(next(ticks)))
    assert not found.complete and found.chosen == {}


@pytest.mark.usefixtures("stopped_agent", "no_tracing")
def test_the_monitor_traces_always_and_names_the_leak(hawkwatch_home: Path) -> None:
    hawkwatch.start(
        memory_trace="always",
        memory_interval_s=0.05,
        memory_snapshot_interval_s=0.05,
        memory_objects=False,
        resources_enabled=False,
        imports_enabled=False,
        stall_enabled=False,
        cpu_enabled=False,
    )
    assert tracemalloc.is_tracing()

    def leaked() -> bool:
        for i in range(20):
            leak_into_global(i)
            churn(i)
        return any(
            json.loads(r.value)["frames"][0]["function"] == "leak_into_global"
            for r in agent_records(c.MEMORY_LEAK)
        )

    assert wait_for(leaked, timeout_s=120)
    hawkwatch.stop()
    assert not tracemalloc.is_tracing()


@pytest.mark.usefixtures("stopped_agent", "no_tracing")
def test_never_means_no_tracing_and_a_bad_mode_is_reported(hawkwatch_home: Path) -> None:
    hawkwatch.start(memory_trace="sometimes", resources_enabled=False, stall_enabled=False)
    assert wait_for(lambda: agent_records(c.HAWKWATCH_ERROR))
    error = json.loads(agent_records(c.HAWKWATCH_ERROR)[0].value)
    assert error["plugin"] == "memory" and "auto, always or never" in error["error"]
    hawkwatch.stop()
    hawkwatch.start(memory_trace="never", memory_interval_s=0.05, resources_enabled=False)
    hawkwatch.event("marker")
    assert not tracemalloc.is_tracing()
    assert agent_records(c.MEMORY_TRACE) == []


@pytest.mark.usefixtures("stopped_agent", "no_tracing")
def test_the_app_stopping_tracemalloc_closes_the_window_without_an_error(
    hawkwatch_home: Path,
) -> None:
    hawkwatch.start(
        memory_trace="always",
        memory_interval_s=0.05,
        memory_snapshot_interval_s=0.05,
        resources_enabled=False,
        stall_enabled=False,
    )
    assert wait_for(lambda: agent_records(c.MEMORY_SNAPSHOT), timeout_s=60)
    tracemalloc.stop()

    def closed() -> list[dict[str, object]]:
        values = [json.loads(r.value) for r in agent_records(c.MEMORY_TRACE)]
        return [v for v in values if v["state"] == "stopped"]

    assert wait_for(closed, timeout_s=60)
    assert closed()[0]["reason"] == "stopped-by-app"
    assert agent_records(c.HAWKWATCH_ERROR) == []


@pytest.mark.usefixtures("stopped_agent", "no_tracing")
def test_growth_starts_tracing_and_quiet_stops_it(hawkwatch_home: Path) -> None:
    hawkwatch.start(
        memory_interval_s=0.05,
        memory_window_s=1,
        memory_growth_min_mb=2,
        memory_growth_min_percent=1,
        memory_snapshot_interval_s=0.05,
        memory_trace_quiet_s=0,
        memory_objects=False,
        resources_enabled=False,
        stall_enabled=False,
        cpu_enabled=False,
    )
    assert not tracemalloc.is_tracing()  # auto: nothing traced before growth
    grown: list[bytearray] = []

    def growing() -> bool:
        grown.append(bytearray(1024 * 1024))  # touched pages: the resident size rises
        grown[-1][::4096] = b"x" * len(range(0, 1024 * 1024, 4096))
        return bool(agent_records(c.MEMORY_TRACE))

    assert wait_for(growing, timeout_s=120)
    growth = json.loads(agent_records(c.MEMORY_GROWTH)[0].value)
    assert growth["growth_bytes"] >= 2 * 1024 * 1024 and growth["slope_bytes_per_s"] > 0
    started = json.loads(agent_records(c.MEMORY_TRACE)[0].value)
    assert started["state"] == "started" and started["reason"] == "growth"

    def stopped() -> list[dict[str, object]]:
        values = [json.loads(r.value) for r in agent_records(c.MEMORY_TRACE)]
        return [v for v in values if v["state"] == "stopped"]

    assert wait_for(stopped, timeout_s=120)  # growth ended: quiet after the minimum snapshots
    assert stopped()[0]["reason"] == "quiet" and stopped()[0]["snapshots"] >= 4
    assert not tracemalloc.is_tracing()
    grown.clear()
