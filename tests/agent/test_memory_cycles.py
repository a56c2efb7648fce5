"""Reference cycles: a real program that makes cycles on every request; the collector's work is
counted, the cycle type is named as made again and again with its cost, plain churn is not, the
sampled garbage is still freed, and what the app leaves in ``gc.garbage`` is reported."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

from hawkwatch.agent.plugins.memory_cycles import CycleCounter
from hawkwatch.api.memory import memory_report
from hawkwatch.api.session import load_session
from hawkwatch.report.memory import memory_lines, to_json_dict

APP = """
import gc, json, weakref, time
import hawkwatch
assert hawkwatch.start(home={home!r}, memory_cycles_interval_s=1, memory_cycles_sample_s=0.02)

class Node:
    def __init__(self, parent=None):
        self.parent = parent
        self.children = []
        if parent is not None:
            parent.children.append(self)

class Plain:
    def __init__(self, i):
        self.i = i

def handle_request(i):
    root = Node()            # root <-> child: a cycle per request, freed only by the collector
    for _ in range(3):
        Node(root)
    plain = [Plain(i) for _ in range(20)]  # churn freed by reference counting
    return weakref.ref(root), len(plain)

refs = []
for i in range(30000):
    ref, _ = handle_request(i)
    if i % 1000 == 0:
        refs.append(ref)
        time.sleep(0.02)
time.sleep(1.2)  # a cycles window is written
gc.collect()
alive = sum(1 for r in refs if r() is not None)

# The app once debugged with DEBUG_SAVEALL and forgot its garbage: it stays in gc.garbage.
gc.set_debug(gc.DEBUG_SAVEALL)
for i in range(50):
    handle_request(i)
gc.collect()
gc.set_debug(0)
print(json.dumps({{"alive": alive, "garbage": len(gc.garbage)}}))
"""


def test_cycles_made_per_request_are_named_with_their_cost(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HAWKWATCH_", "_HAWKWATCH"))}
    done = subprocess.run(
        [sys.executable, "-c", APP.format(home=str(home))],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout.splitlines()[-1])
    assert facts["alive"] == 0  # sampled collections' garbage was freed after all
    assert facts["garbage"] >= 50 * 4
    (folder,) = list((home / "sessions").iterdir())
    report = memory_report(load_session(str(folder)))
    cycles = report.cycles
    assert cycles is not None
    assert cycles.collections >= 10 and cycles.collected >= 1000 and cycles.sampled >= 3
    repeated = {r.type: r for r in cycles.repeated}
    assert "__main__.Node" in repeated, cycles.repeated
    assert "__main__.Plain" not in repeated
    node = repeated["__main__.Node"]
    assert node.objects_per_sample >= 4 and node.per_s > 0 and node.gc_s > 0
    assert cycles.uncollectable_total >= 200
    assert {u.type for u in cycles.uncollectable} >= {"__main__.Node", "list"}
    document = to_json_dict(report)["cycles"]
    assert document["repeated"][0]["type"] in repeated
    assert document["uncollectable_total"] == cycles.uncollectable_total
    text = "\n".join(memory_lines(report))
    assert "made again and again: __main__.Node" in text
    assert "uncollectable (gc.garbage)" in text


def test_an_app_saving_all_its_garbage_is_never_sampled() -> None:
    counter = CycleCounter(0.0)
    flags = gc.get_debug()
    counter.install()
    try:
        gc.set_debug(flags | gc.DEBUG_SAVEALL)
        mark = len(gc.garbage)
        a: list[object] = []
        a.append(a)
        del a
        gc.collect(0)
        assert len(gc.garbage) > mark  # the app's garbage stays where the app put it
        assert counter.sampled == 0
        del gc.garbage[mark:]
    finally:
        gc.set_debug(flags)
        counter.remove()
    assert counter._on_gc not in gc.callbacks


def test_a_sampled_collection_counts_its_garbage_by_type_and_gives_it_back() -> None:
    counter = CycleCounter(0.0)
    mark = len(gc.garbage)
    counter.install()
    try:

        class Ring:
            def __init__(self) -> None:
                self.me = self

        for _ in range(25):
            Ring()
        gc.collect(0)
    finally:
        counter.remove()
    assert len(gc.garbage) == mark and not gc.get_debug() & gc.DEBUG_SAVEALL
    record = counter.window(0.0)
    kinds = {t.type: t for t in record.types}
    ring = next(t for name, t in kinds.items() if name.endswith("Ring"))
    assert ring.objects == 25 and ring.samples == 1
    assert record.sampled == 1 and record.collections >= 1
