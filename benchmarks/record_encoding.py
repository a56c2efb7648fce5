"""Record encoding on the agent's path: typed records (``model.records``) against the dict +
``json.dumps`` path the agent used before them, on the same values.

Run: python benchmarks/record_encoding.py [--pairs 9] [--quick]
(also the ``records`` section of ``benchmarks/agent_overhead.py``).

For each record kind the agent writes often (a resource sample, a GC pause, a span, an event, an
import, a stall with samples) two ways of writing the same value are timed, in-process:

  old   build the dict literal, ``json.dumps(value, separators=(",", ":"), ensure_ascii=False,
        default=str)``, then ``RecordStore.store(collection, key, text)``
  new   build the struct, then ``RecordStore.write(record)`` (``encode_value()`` gives UTF-8
        bytes that the store appends as they are; a series sample is formatted in one step)

and, as the second figure, the encoding alone (dict + ``json.dumps`` and the key against struct
+ ``record_key`` + ``encode_value``; for a series sample ``line_text``, what the store uses).
Both arms write into real stores in a temporary folder (flushes included). Per BENCHMARKS.md the
arms alternate (A B, then B A, …) for ``--pairs`` rounds after a warm-up; each figure is the
median of the per-round ratios new/old, with min and max. Below 1.00 the typed path is faster.
Times are the thread's CPU time (``time.thread_time_ns``): on a shared machine, wall time mostly
measures the neighbours; the store's flushes run on its worker thread for both arms alike. The
values are checked equal (as JSON) before timing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hawkwatch.model.records import (
    Anr,
    AnrGc,
    AnrSample,
    CustomSpan,
    CustomTimeEvent,
    Footprint,
    GcPause,
    ImportTime,
    ScalarRecord,
    StackFrame,
    TypedRecord,
)
from hawkwatch.store import RecordStore

T0 = 1_700_000_000.123456
FRAMES = [("handler", "/srv/app/views.py", 42), ("dispatch", "/srv/app/router.py", 120)] * 8


def _dumps(value: Any) -> str:
    """What ``agent.monitor.to_json`` did for every record value."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _time_key(t: float) -> str:
    return f"{t:.6f}"


@dataclass(frozen=True)
class Kind:
    name: str
    old: Callable[[float], tuple[str, str, str]]  # t -> (collection, key, value text)
    new: Callable[[float], TypedRecord]


def _old_series(t: float) -> tuple[str, str, str]:
    return "r-mem", _time_key(t), f"{212.5 + t % 3:.2f}"


def _new_series(t: float) -> TypedRecord:
    return Footprint(time=t, value=212.5 + t % 3)


def _old_gc(t: float) -> tuple[str, str, str]:
    value = {
        "start": t,
        "generation": 2,
        "duration_ms": 12.345,
        "collected": 1200,
        "uncollectable": 0,
        "thread": "MainThread",
    }
    return "gc-pause", _time_key(t), _dumps(value)


def _new_gc(t: float) -> TypedRecord:
    return GcPause(
        start=t,
        generation=2,
        duration_ms=12.345,
        collected=1200,
        uncollectable=0,
        thread="MainThread",
    )


def _old_span(t: float) -> tuple[str, str, str]:
    value = {"name": "GET /items", "start": t, "duration_ms": 3.25, "thread": "MainThread"}
    return "custom-span", _time_key(t), _dumps(value)


def _new_span(t: float) -> TypedRecord:
    return CustomSpan(name="GET /items", start=t, duration_ms=3.25, thread="MainThread")


def _old_event(t: float) -> tuple[str, str, str]:
    value = {"time": t, "event": "cache-warmed", "extra": '{"items": 120}'}
    return "custom-time-event", _time_key(t), _dumps(value)


def _new_event(t: float) -> TypedRecord:
    return CustomTimeEvent(time=t, event="cache-warmed", extra='{"items": 120}')


def _old_import(t: float) -> tuple[str, str, str]:
    value = {
        "time": t,
        "self_us": 1200,
        "cumulative_us": 5300,
        "parent": "app.views",
        "thread": "MainThread",
        "module": "app.models",
    }
    return "import-time", "app.models", _dumps(value)


def _new_import(t: float) -> TypedRecord:
    return ImportTime(
        time=t,
        self_us=1200,
        cumulative_us=5300,
        parent="app.views",
        thread="MainThread",
        module="app.models",
    )


def _old_anr(t: float) -> tuple[str, str, str]:
    value = {
        "duration": 812.5,
        "startFrom": t,
        "inBackground": False,
        "stacks": [
            {
                "time": t + i * 0.05,
                "frames": [list(f) for f in FRAMES],
                "titleframe": 0,
                "capturedCount": 1,
                "threadCount": 4,
                "source": "watchdog",
            }
            for i in range(8)
        ],
        "loop": "asyncio",
        "thread": "MainThread",
        "thread_id": 140,
        "samples": 8,
        "source": "watchdog",
        "gc": {"collections": 1, "duration_ms": 4.5},
    }
    return "anr", f"{_time_key(t)}_0", _dumps(value)


def _new_anr(t: float) -> TypedRecord:
    return Anr(
        duration=812.5,
        start_from=t,
        in_background=False,
        stacks=tuple(
            AnrSample(
                time=t + i * 0.05,
                frames=tuple(StackFrame(*f) for f in FRAMES),
                titleframe=0,
                captured_count=1,
                thread_count=4,
                source="watchdog",
            )
            for i in range(8)
        ),
        loop="asyncio",
        thread="MainThread",
        thread_id=140,
        samples=8,
        source="watchdog",
        gc=AnrGc(1, 4.5),
    )


KINDS = (
    Kind("r-mem sample", _old_series, _new_series),
    Kind("gc-pause", _old_gc, _new_gc),
    Kind("custom-span", _old_span, _new_span),
    Kind("custom-time-event", _old_event, _new_event),
    Kind("import-time", _old_import, _new_import),
    Kind("anr (8 samples)", _old_anr, _new_anr),
)


def check_same_values() -> None:
    for kind in KINDS:
        collection, key, text = kind.old(T0)
        record = kind.new(T0)
        assert (collection, key) == (record.collection, record.record_key()), kind.name
        if collection == "r-mem":
            assert text == record.encode_value().decode(), kind.name
        else:
            assert json.loads(text) == json.loads(record.encode_value()), kind.name


def _time_old_store(kind: Kind, store: RecordStore, n: int) -> float:
    old, put = kind.old, store.store
    started = time.thread_time_ns()
    for i in range(n):
        put(*old(T0 + i))
    return (time.thread_time_ns() - started) / n


def _time_new_store(kind: Kind, store: RecordStore, n: int) -> float:
    new, write = kind.new, store.write
    started = time.thread_time_ns()
    for i in range(n):
        write(new(T0 + i))
    return (time.thread_time_ns() - started) / n


def _time_old_encode(kind: Kind, n: int) -> float:
    old = kind.old
    started = time.thread_time_ns()
    for i in range(n):
        old(T0 + i)
    return (time.thread_time_ns() - started) / n


def _time_new_encode(kind: Kind, n: int) -> float:
    new = kind.new
    started = time.thread_time_ns()
    for i in range(n):
        record = new(T0 + i)
        if isinstance(record, ScalarRecord):  # what the store asks of a series sample
            record.line_text()
        else:
            record.record_key()
            record.encode_value()
    return (time.thread_time_ns() - started) / n


@dataclass
class Result:
    name: str
    old_ns: list[float]
    new_ns: list[float]
    ratios: list[float]
    encode_ratios: list[float]


def measure(pairs: int, n: int, folder: Path) -> list[Result]:
    """Alternated rounds per kind; ``n`` records per timed run."""
    results = []
    for kind in KINDS:
        result = Result(kind.name, [], [], [], [])
        with (
            RecordStore(folder / f"old-{kind.name}") as old_store,
            RecordStore(folder / f"new-{kind.name}") as new_store,
        ):
            for round_ in range(pairs + 1):  # round 0 warms up
                if round_ % 2:
                    new = _time_new_store(kind, new_store, n)
                    old = _time_old_store(kind, old_store, n)
                    new_encode, old_encode = _time_new_encode(kind, n), _time_old_encode(kind, n)
                else:
                    old = _time_old_store(kind, old_store, n)
                    new = _time_new_store(kind, new_store, n)
                    old_encode, new_encode = _time_old_encode(kind, n), _time_new_encode(kind, n)
                if round_:
                    result.old_ns.append(old)
                    result.new_ns.append(new)
                    result.ratios.append(new / old)
                    result.encode_ratios.append(new_encode / old_encode)
        results.append(result)
    return results


def report(results: list[Result], pairs: int) -> tuple[list[str], str]:
    """Table lines and the one-line summary."""
    lines = [
        f"{'record':<20}{'old ns':>9}{'new ns':>9}{'write new/old (min-max)':>26}"
        f"{'encode new/old (min-max)':>27}"
    ]
    lines.extend(
        f"{r.name:<20}{statistics.median(r.old_ns):>9.0f}{statistics.median(r.new_ns):>9.0f}"
        f"{_ratio(r.ratios):>26}{_ratio(r.encode_ratios):>27}"
        for r in results
    )
    every = [x for r in results for x in r.ratios]
    worst = max(results, key=lambda r: statistics.median(r.ratios))
    summary = (
        f"record encoding, typed vs dict + json.dumps (write into the store, median of {pairs} "
        f"alternated pairs per kind): {statistics.median(every):.2f}x over all kinds; slowest "
        f"kind {worst.name} {statistics.median(worst.ratios):.2f}x "
        f"({'no slower' if statistics.median(worst.ratios) <= 1.0 else 'SLOWER'})"
    )
    return lines, summary


def _ratio(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def section(pairs: int, quick: bool) -> str:
    """Run and print the section; returns the summary line."""
    check_same_values()
    n = 1_000 if quick else 5_000
    print(f"\n## records: typed record encoding vs dict + json.dumps ({pairs} pairs, n={n})")
    with tempfile.TemporaryDirectory(prefix="hawkwatch-records-") as folder:
        results = measure(pairs, n, Path(folder))
    lines, summary = report(results, pairs)
    for line in lines:
        print("  " + line)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pairs", type=int, default=15, help="alternated rounds (default 15)")
    parser.add_argument("--quick", action="store_true", help="fewer records per run")
    args = parser.parse_args()
    print(
        f"machine: nproc={os.cpu_count()}, {platform.machine()}; python "
        f"{platform.python_version()} ({sys.executable}); load average "
        f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print(f"command: {' '.join([sys.executable, *sys.argv])}")
    print(section(args.pairs, args.quick))


if __name__ == "__main__":
    main()
