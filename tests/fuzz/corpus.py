"""A seeded corpus of hostile inputs: mutated crash fixtures, JetsamEvents and session folders.

Everything is derived from a seed, so a failure names an input that can be rebuilt exactly
(``crash_inputs(seed)[n]``, ``build_session(folder, seed, n)``). The mutations are the ones the
adversarial run found faults with: bit flips, truncation, inserted NULs, deep nesting, numbers
thousands of digits long, absurd floats, and session files replaced by FIFOs or directories.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.builders import (
    cpu_highload_records,
    event_record,
    exit_state_record,
    hawkwatch_launch_record,
    lines_bytes,
    mmap_image,
    series_records,
    span_record,
    stackframe_ext,
    stackframe_node,
)
from tests.formats.crash_fixtures import fixture_files
from tests.formats.jetsam_sample import jetsam_bytes

T0 = 1_700_000_000.0
DEEP = b"[" * 50_000
BIG = b"9" * 5_000

# -- byte mutations --------------------------------------------------------------------------


def _flip(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if out:
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def _truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def _insert(piece: bytes) -> Callable[[random.Random, bytes], bytes]:
    def insert(rng: random.Random, data: bytes) -> bytes:
        at = rng.randrange(len(data) + 1)
        return data[:at] + piece + data[at:]

    return insert


def _replace_number(piece: bytes) -> Callable[[random.Random, bytes], bytes]:
    """Replace one run of digits (a pid, an address, a count) with ``piece``."""

    def replace(rng: random.Random, data: bytes) -> bytes:
        starts = [i for i in range(len(data)) if data[i : i + 1].isdigit()]
        if not starts:
            return data + piece
        at = rng.choice(starts[:5000])
        end = at
        while end < len(data) and data[end : end + 1].isdigit():
            end += 1
        return data[:at] + piece + data[end:]

    return replace


def _duplicate(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return data
    start = rng.randrange(len(data))
    chunk = data[start : start + rng.randint(1, 4096)]
    return data[:start] + chunk * rng.randint(2, 20) + data[start:]


def _delete(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return data
    start = rng.randrange(len(data))
    return data[:start] + data[start + rng.randint(1, 512) :]


MUTATIONS: tuple[tuple[str, Callable[[random.Random, bytes], bytes]], ...] = (
    ("flip", _flip),
    ("truncate", _truncate),
    ("nul", _insert(b"\x00")),
    ("deep", _insert(DEEP)),
    ("deep-object", _insert(b'{"a":' * 20_000)),
    ("big-number", _replace_number(BIG)),
    ("big-hex", _replace_number(b"0x" + b"f" * 5_000)),
    ("huge-float", _replace_number(b"1e999")),
    ("nan", _replace_number(b"NaN")),
    ("duplicate", _duplicate),
    ("delete", _delete),
    ("crlf", lambda rng, data: data.replace(b"\n", b"\r\n")),
    ("utf16", lambda rng, data: data.decode("utf-8", "replace").encode("utf-16")),
)


def mutate(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    """One to three mutations of ``data``; returns their names and the result."""
    names = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        name, mutation = rng.choice(MUTATIONS)
        names.append(name)
        data = mutation(rng, data)
    return "+".join(names), data


# -- crash reports and JetsamEvents ----------------------------------------------------------


@dataclass(frozen=True)
class Input:
    name: str
    data: bytes


def crash_seeds() -> list[Input]:
    seeds = [Input(str(p.relative_to(p.parents[1])), p.read_bytes()) for p in fixture_files()]
    seeds.append(Input("jetsam-sample", jetsam_bytes()))
    return seeds


def crash_inputs(seed: int, per_seed: int) -> Iterator[Input]:
    """``per_seed`` mutations of every crash fixture and of the JetsamEvent sample."""
    rng = random.Random(seed)
    for base in crash_seeds():
        yield base
        for n in range(per_seed):
            how, data = mutate(rng, base.data)
            yield Input(f"{base.name}#{n}:{how}", data)


# -- session folders -------------------------------------------------------------------------

PROFILE_WINDOW = {
    "start": T0 + 1,
    "duration_s": 1.0,
    "samples": 3,
    "rate_hz": 100,
    "budget": 0.01,
    "cost_s": 0.001,
    "max_depth_hit": False,
    "table": {
        "frames": [["work", "app.py", 3], ["thread MainThread", "", 0]],
        "nodes": [[1, -1], [0, 0]],
    },
    "counts": [[1, 3, 2]],
}


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def hawkwatch_session_files() -> dict[str, bytes]:
    """A hawkwatch session: records (flushed and buffered), session.json, side files."""
    records = [
        hawkwatch_launch_record(process_start=T0, main_started=T0 + 0.1, ready=T0 + 0.5),
        *series_records("cpu", (T0, 10), (T0 + 1, 20), (T0 + 3, 50)),
        *series_records("r-mem", (T0 + 0.5, 64)),
        event_record(T0 + 0.01, "App::Start"),
        span_record(T0 + 1, "checkout", 120.0),
        event_record(T0 + 4, "App::Exit", '{"exit_code": 0}'),
        exit_state_record(T0 + 4, clean=True, exit_code=0),
    ]
    lines = ["collection,key,value", f"launch-time,{T0},{T0}"]
    lines += [f"{r.collection},{r.key},{r.value}" for r in records]
    lines.append(f"cpu-profile,{T0 + 1:.6f},{_compact(PROFILE_WINDOW)}")
    side = {k: v for k, v in PROFILE_WINDOW.items() if k not in ("table", "counts")}
    lines.append(f"cpu-profile,{T0 + 2:.6f},{_compact({**side, 'file': 'cpu-profile/w.json'})}")
    lines.append(f'gc-pause,{T0 + 2:.6f},{{"start":{T0 + 2},"generation":2,"duration_ms":12.5}}')
    metadata = {
        "format": "hawkwatch-session",
        "format_version": 1,
        "pid": 4242,
        "argv": ["app.py"],
        "start_time": T0,
        "app_name": "shop",
    }
    return {
        "records.mtlog": lines_bytes(lines[:-3]),
        "records.mmap2": mmap_image(lines_bytes(lines[-3:])),
        "session.json": json.dumps(metadata, indent=2).encode(),
        "cpu-profile/w.json": _compact(PROFILE_WINDOW).encode(),
    }


def mthawkeye_session_files() -> dict[str, bytes]:
    """An MTHawkeye folder from iOS: CFAbsoluteTime keys, anr, CPU trees and the ext file."""
    key = "585734400.25"
    tree = [stackframe_node("0x1a2b3c4d0", 10, stackframe_node("0x100e4c3c4", 7, total=10))]
    lines = ["collection,key,value", "launch-time,1554251562.052403,1554251562.052403"]
    lines += [f"{r.collection},{r.key},{r.value}" for r in cpu_highload_records(key, 64, 93, tree)]
    lines.append("r-mem,1554251563.1,120.50")
    lines.append(
        'anr,1554251565_0,{"duration":500,"startFrom":1554251565,"inBackground":false,'
        '"stacks":[{"time":1554251565.1,"frames":["0x1a2b3c4d0","0x100e4c3c4"],'
        '"titleframe":"0x100e4c3c4","capturedCount":2}]}'
    )
    dyld = {
        "os_version": "12.1",
        "arch": "arm64",
        "dyld_images": [{"base": "0x100000000", "name": "/var/app/Shop", "uuid": "ab" * 16}],
    }
    return {
        "records.mtlog": lines_bytes(lines),
        "dyld-images": _compact(dyld).encode(),
        "cpu-highload-stackframe-ext": stackframe_ext(("585734500.00", tree)),
    }


SESSION_SEEDS: tuple[Callable[[], dict[str, bytes]], ...] = (
    hawkwatch_session_files,
    mthawkeye_session_files,
)
SPECIAL = ("fifo", "directory", "empty", "loop")


def build_session(folder: Path, seed: int, n: int) -> str:
    """Write corrupted session ``n`` of ``seed`` into ``folder``; returns what was done."""
    rng = random.Random(seed * 1_000_003 + n)
    files = SESSION_SEEDS[n % len(SESSION_SEEDS)]()
    actions = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        victim = rng.choice(sorted(files))
        choice = rng.random()
        if choice < 0.15:
            files[victim] = rng.choice(SPECIAL).encode()  # a marker: made special below
            actions.append(f"{victim}={files[victim].decode()}")
        elif victim == "session.json" and choice < 0.45:
            value = rng.choice(("NaN", "Infinity", "-1e300", "1e300", '"x"', "[[[[1]]]]"))
            files[victim] = files[victim].replace(str(T0).encode(), value.encode())
            actions.append(f"session.json start_time={value}")
        else:
            how, files[victim] = mutate(rng, files[victim])
            actions.append(f"{victim}:{how}")
    for name, data in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        special = data.decode() if data in {s.encode() for s in SPECIAL} else None
        if special == "fifo":
            os.mkfifo(path)
        elif special == "directory":
            path.mkdir()
        elif special == "loop":
            path.symlink_to(path.name)
        else:
            path.write_bytes(b"" if special == "empty" else data)
    return f"{SESSION_SEEDS[n % len(SESSION_SEEDS)].__name__}: {', '.join(actions)}"
