"""Tiny builders for test inputs: bytes on disk written the way MTHawkeye (or hawkwatch) would.

The layouts are spelled out here by hand from ``formats/hawkeye.md`` §2 rather than taken from
``hawkwatch.store``, so a test that builds a file with these helpers checks the store against
the format, not against itself.
"""

from __future__ import annotations

import struct
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path

from hawkwatch.model import Record

MMAP_SIZE = 153_600
"""Size of every ``.mmap2`` file (MTAppenderFile's ``kBufferBlockLength``)."""
END_MARKER = b"\x00\x00\x00\r"
"""The four bytes MTAppenderFile writes right after the data on every append."""
JOURNAL_SIZE = 24
"""hawkwatch's flush journal: the last 24 bytes of a ``.mmap2``."""
OVERFLOW_NOTICE = b"[F][ sg_buffer_async.Length() >= BUFFER_BLOCK_LENTH*4/5, len: 122900"
"""The line MTAppenderFile writes in place of a line it dropped."""


def lines_bytes(lines: Iterable[bytes | str]) -> bytes:
    """Lines joined the way the appender stores them: each one followed by LF."""
    return b"".join((x.encode() if isinstance(x, str) else x) + b"\n" for x in lines)


def mmap_image(
    data: bytes,
    *,
    stale: bytes = b"",
    marker: bool = True,
    journal: bytes | None = None,
    size: int = MMAP_SIZE,
) -> bytes:
    """A ``.mmap2`` file: ``data``, the end marker, ``stale`` bytes, zeros, optional journal."""
    image = bytearray(size)
    tail = (END_MARKER if marker else b"") + stale
    image[: len(data) + len(tail)] = data + tail
    if journal is not None:
        image[size - JOURNAL_SIZE :] = journal
    return bytes(image[:size])


def flush_journal(offset: int, block: bytes) -> bytes:
    """The journal a hawkwatch flush of ``block`` to ``.mtlog`` offset ``offset`` leaves.

    Layout, little-endian: magic ``hwflush1`` (8 bytes), offset (u64), length (u32), digest (u32):
    crc32 of the block, or for blocks over 8 KiB of its first 4 KiB then its last 4 KiB.
    """
    if len(block) <= 8192:
        digest = zlib.crc32(block)
    else:  # crc32 of the first 4 KiB, continued over the last 4 KiB
        digest = zlib.crc32(block[-4096:], zlib.crc32(block[:4096]))
    return struct.pack("<8sQII", b"hwflush1", offset, len(block), digest)


def write_appender(
    folder: Path,
    name: str,
    *,
    log: bytes = b"",
    buffer: bytes | None = None,
) -> Path:
    """Write ``<name>.mtlog`` and (unless ``buffer`` is None) ``<name>.mmap2``; returns folder."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.mtlog").write_bytes(log)
    if buffer is not None:
        (folder / f"{name}.mmap2").write_bytes(buffer)
    return folder


def write_hawkeye_records(
    folder: Path,
    flushed: Iterable[bytes | str],
    unflushed: Iterable[bytes | str] = (),
    *,
    stale: bytes = b"",
) -> Path:
    """An MTHawkeye ``records`` pair: flushed lines in ``.mtlog``, the rest in ``.mmap2``.

    The ``.mmap2`` holds ``unflushed`` lines, the end marker and ``stale`` bytes, as a process
    killed before its next flush leaves it (first byte 00 when nothing is unflushed).
    """
    data = lines_bytes(unflushed)
    buffer = mmap_image(data, stale=stale) if data else mmap_image(b"\x00" + stale, marker=False)
    return write_appender(folder, "records", log=lines_bytes(flushed), buffer=buffer)


def read_file(path: Path) -> bytes:
    """The file's bytes, or b"" when it does not exist."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


# -- records for the session report (tests/analysis, tests/report) -----------------------------
# Values are written with the shapes in docs/collections.md; keys use the store's ``%.6f``.


def _record(collection: str, key: str, value: str):
    from hawkwatch.model import Record

    return Record(collection, key, value)


def _json(fields: dict) -> str:
    import json

    return json.dumps(fields, separators=(",", ":"))


def time_key(t: float) -> str:
    """A time key as the store writes it."""
    return f"{t:.6f}"


def launch_time_record(t: float):
    """The ``launch-time`` record a new records file starts with."""
    return _record("launch-time", repr(t), repr(t))


def series_records(collection: str, *samples: tuple[float, float]):
    """One record per ``(time, value)`` of a sampled series (``cpu``, ``r-mem``, …)."""
    return [_record(collection, time_key(t), f"{v:.2f}") for t, v in samples]


def hawkwatch_launch_record(**fields: float):
    """A hawkwatch ``app-launch`` value; fields not given are 0 (not captured)."""
    names = ("process_start", "interpreter_ready", "agent_started", "main_started", "ready")
    value = {name: fields.pop(name, 0) for name in names}
    value["duration_s"] = fields.pop("duration_s", 0)
    value.update(fields)
    return _record("app-launch", "0", _json(value))


def mthawkeye_launch_record(**fields: float):
    """An MTHawkeye ``app-launch`` value with exactly the fields given."""
    return _record("app-launch", "0", _json(fields))


def event_record(t: float, event: str | None, extra: str | None = None):
    value: dict = {"time": t}
    if event is not None:
        value["event"] = event
    if extra is not None:
        value["extra"] = extra
    return _record("custom-time-event", time_key(t), _json(value))


def span_record(
    start: float,
    name: str,
    duration_ms: float,
    *,
    thread: str = "MainThread",
    error: str | None = None,
):
    value: dict = {"name": name, "start": start, "duration_ms": duration_ms, "thread": thread}
    if error is not None:
        value["error"] = error
    return _record("custom-span", time_key(start), _json(value))


def gc_pause_record(
    t: float, generation: int, duration_ms: float, *, collected: int = 0, thread: str = "MainThread"
):
    value = {
        "generation": generation,
        "duration_ms": duration_ms,
        "collected": collected,
        "uncollectable": 0,
        "thread": thread,
    }
    return _record("gc-pause", time_key(t), _json(value))


def import_record(
    module: str, cumulative_us: int, self_us: int, *, parent: str | None = None, t: float = 0.0
):
    value = {
        "time": t,
        "self_us": self_us,
        "cumulative_us": cumulative_us,
        "parent": parent,
        "thread": "MainThread",
    }
    return _record("import-time", module, _json(value))


def exit_state_record(
    t: float,
    *,
    clean: bool,
    exit_code: int | None = 0,
    signal: int | None = None,
    source: str = "agent",
):
    value = {"clean": clean, "exit_code": exit_code, "signal": signal, "source": source}
    return _record("exit-state", time_key(t), _json(value))


def hawkwatch_error_record(t: float, plugin: str, phase: str, error: str):
    value = {"plugin": plugin, "phase": phase, "error": error}
    return _record("hawkwatch-error", time_key(t), _json(value))


def wait_for(predicate: Callable[[], object], timeout_s: float = 10.0) -> bool:
    """Poll ``predicate`` until it is true or the deadline passes (never a bare sleep)."""
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return bool(predicate())


def agent_records(collection: str | None = None) -> list[Record]:
    """Records of the running in-process agent's session (queued ones included)."""
    from hawkwatch.agent import current_agent

    agent = current_agent()
    assert agent is not None and agent.records is not None, "the agent is not running"
    return agent.records.read(collection).records


def json_values(records: Iterable[Record]) -> list[dict[str, object]]:
    """The JSON values of records, parsed."""
    import json

    return [json.loads(r.value) for r in records]


# -- CPU trace records, MTHawkeye's shapes (formats/hawkeye.md §4, §5.3) ----------------------


def stackframe_node(frame: str, count: int, *children: dict, total: int | None = None) -> dict:
    """One ``cpu-highload-stackframe`` node as MTHawkeye writes it (no ``children`` on leaves).

    ``proportion`` is count / ``total`` (the sum of the root counts; defaults to ``count``).
    """
    node: dict = {"frame": frame, "count": count, "proportion": count / (total or count)}
    if children:
        node["children"] = list(children)
    return node


def cpu_highload_records(key: str, lasting: float, average: float, roots: list[dict]):
    """The two records MTHawkeye stores at the end of an episode; ``key`` is ``%.2f``
    CFAbsoluteTime on iOS, and the value's numbers are strings."""
    value = {"start": key, "lasting": f"{lasting:.2f}", "average": f"{average:.2f}"}
    return [
        _record("cpu-highload", key, _json(value)),
        _record("cpu-highload-stackframe", key, _json(roots)),
    ]


def stackframe_ext(*entries: tuple[str, list[dict]]) -> bytes:
    """A ``cpu-highload-stackframe-ext`` file: ``<key>,<json>`` then U+00B7 per record."""
    return "".join(f"{key},{_json(roots)}\u00b7" for key, roots in entries).encode()


def run_script(
    folder: Path, source: str, timeout_s: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run ``source`` as a script of its own in this Python (what a test's app does in its own
    process: exec, fork, exit), capturing its text output."""
    script = folder / "app_script.py"
    script.write_text(source, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=timeout_s
    )
