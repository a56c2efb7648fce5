"""MallocStackLogging index files (``stack-logs.<pid>.<addr>.<prog>.XXXXXX.index``), replayed.

Spec: ``formats/msl.md`` §1–3 and §8. No header: a flat array of records, in one of four layouts

================  =====  ========================================================================
layout            bytes  fields (little-endian)
================  =====  ========================================================================
msl-166-64        24     ``u64 argument; u64 address^0x5555; u64 offset_and_flags``
msl-166-32        16     ``u32 argument; u32 address^0x5555; u64 offset_and_flags``
msl-framework-64  32     ``u64 argument; u64 address^0x5555; u64 msl_payload; u32 flags; u32 pad``
msl-framework-32  24     ``u32 argument; u32 address^0x5555; u64 msl_payload; u32 flags; u32 pad``
================  =====  ========================================================================

``offset_and_flags``: stack id in bits 0–47, VM user tag in 48–55, type flags in 56–63.
``msl_payload``: µs form (bit 0 set) ``index = p >> 42``, ``time = (p >> 3) & (2³⁹−1)`` µs;
ms form ``index = p >> 34``, ``time = (p >> 3) & (2³¹−1)`` ms; all ones = no stack.

The layout is detected by decoding a sample of records in each framing and keeping the one whose
records look real: a known type, zero padding, VM tags only on VM events, and 16-byte aligned
malloc addresses (after the XOR, which sets the low bits of a disguised aligned address).

Replay (§2): malloc allocations are live from their ``alloc`` until a ``dealloc`` of the same
address (realloc is logged as both); VM regions from ``vm_allocate`` until a ``vm_deallocate``
covers them — partly covered regions are trimmed or split, as ``munmap`` does. The file is read
through ``mmap`` in chunks of ``CHUNK_RECORDS``: decoding and malloc pairing are vectorised with
numpy per chunk (sort by address, last event per address wins), so memory is bounded by a chunk
plus the live set. Only VM events, which are few, are replayed one by one.
"""

from __future__ import annotations

import bisect
import mmap
import os
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import numpy.typing as npt

from hawkwatch.errors import FormatError

DISGUISE: Final = 0x5555
NO_STACK: Final = 0xFFFFFFFFFFFFFFFF
CHUNK_RECORDS: Final = 1 << 21
SAMPLE_RECORDS: Final = 1 << 14
_POSITION_BITS: Final = 22
_POSITION_MASK: Final = (1 << _POSITION_BITS) - 1  # positions in a chunk, packed under addresses

TYPE_GENERIC, TYPE_ALLOC, TYPE_DEALLOC = 1, 2, 4
TYPE_VM_ALLOCATE, TYPE_VM_DEALLOCATE, TYPE_MAPPED = 16, 32, 128
_VALID_TYPES: Final = [1, 2, 4, 16, 32, 16 | 128, 32 | 128]

LAYOUTS: Final = {
    "msl-framework-64": np.dtype(
        [("arg", "<u8"), ("addr", "<u8"), ("stack", "<u8"), ("flags", "<u4"), ("pad", "<u4")]
    ),
    "msl-166-64": np.dtype([("arg", "<u8"), ("addr", "<u8"), ("stack", "<u8")]),
    "msl-framework-32": np.dtype(
        [("arg", "<u4"), ("addr", "<u4"), ("stack", "<u8"), ("flags", "<u4"), ("pad", "<u4")]
    ),
    "msl-166-32": np.dtype([("arg", "<u4"), ("addr", "<u4"), ("stack", "<u8")]),
}
"""Layouts in the order they are preferred when two look equally real."""

DESCRIPTIONS: Final = {
    "msl-framework-64": "MallocStackLogging iOS 13+/macOS 10.15+, 64-bit, 32-byte records",
    "msl-166-64": "MallocStackLogging libmalloc 116-166, 64-bit, 24-byte records",
    "msl-framework-32": "MallocStackLogging iOS 13+/macOS 10.15+, 32-bit, 24-byte records",
    "msl-166-32": "MallocStackLogging libmalloc 116-166, 32-bit, 16-byte records",
}

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]


@dataclass(slots=True)
class Columns:
    """Decoded records: un-disguised address, argument, type flags (VM tag in bits 24–31),
    table stack id (``NO_STACK`` for none); ``time_us`` keeps the raw framework payloads
    (``payload_time_us`` decodes the one time a replay needs)."""

    address: U64
    argument: U64
    flags: npt.NDArray[np.uint32]
    stack: U64
    time_us: U64 | None
    valid: npt.NDArray[np.bool_]


def decode(records: npt.NDArray[np.void], layout: str) -> Columns:
    """Columns of a structured record array in ``layout``."""
    address = records["addr"].astype(np.uint64) ^ np.uint64(DISGUISE)
    argument = records["arg"].astype(np.uint64)
    raw = records["stack"]
    if layout.startswith("msl-166"):
        type_byte = (raw >> np.uint64(56)).astype(np.uint32)
        tag = ((raw >> np.uint64(48)) & np.uint64(0xFF)).astype(np.uint32)
        flags = type_byte | (tag << np.uint32(24))
        stack = raw & np.uint64(0xFFFFFFFFFFFF)
        time_us = None
        padding_ok = np.ones(len(records), dtype=bool)
    else:
        flags = records["flags"].astype(np.uint32)
        micro = (raw & np.uint64(1)) == 1
        stack = np.where(micro, raw >> np.uint64(42), raw >> np.uint64(34))
        stack[raw == np.uint64(NO_STACK)] = np.uint64(NO_STACK)
        time_us = raw
        padding_ok = (records["pad"] == 0) & ((flags & np.uint32(~0xFF0000B7 & 0xFFFFFFFF)) == 0)
    valid = padding_ok & _known_type(flags) & _aligned(address, flags)
    return Columns(address, argument, flags, stack, time_us, valid)


_TYPE_OK = np.zeros(256, dtype=bool)
_TYPE_OK[list(_VALID_TYPES)] = True
_TYPE_VM = np.zeros(256, dtype=bool)
_TYPE_VM[[16, 32, 16 | 128, 32 | 128]] = True


def payload_time_us(payload: int) -> int | None:
    """Time since logging started of an ``msl_payload`` (None for the invalid payload)."""
    if payload == NO_STACK:
        return None
    if payload & 1:
        return (payload >> 3) & (2**39 - 1)
    return ((payload >> 3) & (2**31 - 1)) * 1000


def _known_type(flags: npt.NDArray[np.uint32]) -> npt.NDArray[np.bool_]:
    """A type byte the logger writes, and a VM tag only on VM events (table lookups)."""
    kind = (flags & np.uint32(0xFF)).astype(np.uint8)
    out: npt.NDArray[np.bool_] = _TYPE_OK[kind] & (_TYPE_VM[kind] | (flags < np.uint32(1 << 24)))
    return out


def _aligned(address: U64, flags: npt.NDArray[np.uint32]) -> npt.NDArray[np.bool_]:
    malloc = (flags & np.uint32(TYPE_ALLOC | TYPE_DEALLOC)) != 0
    out: npt.NDArray[np.bool_] = ~malloc | ((address & np.uint64(0xF)) == 0)
    return out


def detect_layout(data: bytes | memoryview | mmap.mmap) -> tuple[str, float]:
    """The layout whose sample decodes best, and the fraction of its sample that looked real."""
    best, best_score = "", -1.0
    for layout, dtype in LAYOUTS.items():
        count = min(len(data) // dtype.itemsize, SAMPLE_RECORDS)
        if count == 0:
            continue
        sample = np.frombuffer(data, dtype=dtype, count=count)
        score = float(decode(sample, layout).valid.mean())
        if score > best_score + 1e-9:
            best, best_score = layout, score
    return best, best_score


@dataclass
class Replay:
    """Live allocations after replaying a log: malloc blocks as columns, VM regions as a map.

    ``records`` were replayed (of ``total_records`` whole records in the file); ``invalid``
    records were skipped (unknown type, bad padding, unaligned address) — ``first_invalid`` is
    the index of the first one. ``time_us`` is the last replayed record's time, when the layout
    stores one.
    """

    layout: str
    record_size: int
    total_records: int
    records: int
    malloc_address: U64
    malloc_size: U64
    malloc_stack: U64
    malloc_record: I64
    vm: dict[int, tuple[int, int, int, int]] = field(default_factory=dict)
    invalid: int = 0
    first_invalid: int | None = None
    trailing_bytes: int = 0
    time_us: int | None = None
    sample_score: float = 1.0

    @property
    def description(self) -> str:
        return DESCRIPTIONS[self.layout]


def replay(
    data: bytes | memoryview | mmap.mmap,
    *,
    at: int | None = None,
    layout: str | None = None,
    source: str = "<bytes>",
) -> Replay:
    """Live allocations after the first ``at`` records (all when None) of an index file."""
    if layout is None:
        layout, score = detect_layout(data)
        if not layout or score < 0.5:
            raise FormatError(source, "not a MallocStackLogging index file: no record layout fits")
    else:
        score = 1.0
    dtype = LAYOUTS[layout]
    total = len(data) // dtype.itemsize
    end = total if at is None else max(0, min(at, total))
    empty = np.zeros(0, dtype=np.uint64)
    state = Replay(
        layout=layout,
        record_size=dtype.itemsize,
        total_records=total,
        records=end,
        malloc_address=empty,
        malloc_size=empty,
        malloc_stack=empty,
        malloc_record=np.zeros(0, dtype=np.int64),
        trailing_bytes=len(data) - total * dtype.itemsize,
        sample_score=score,
    )
    for start in range(0, end, CHUNK_RECORDS):
        count = min(CHUNK_RECORDS, end - start)
        chunk = np.frombuffer(data, dtype=dtype, count=count, offset=start * dtype.itemsize)
        _replay_chunk(state, decode(chunk, layout), start)
    return state


def _replay_chunk(state: Replay, columns: Columns, start: int) -> None:
    valid = columns.valid
    bad = int(np.count_nonzero(~valid))
    if bad:
        if state.first_invalid is None:
            state.first_invalid = start + int(np.argmin(valid))
        state.invalid += bad
    if columns.time_us is not None and len(valid):
        state.time_us = payload_time_us(int(columns.time_us[-1]))
    kind = columns.flags & np.uint32(0xFF)
    is_vm = (kind & np.uint32(TYPE_VM_ALLOCATE | TYPE_VM_DEALLOCATE)) != 0
    malloc = valid & ~is_vm & ((kind & np.uint32(TYPE_ALLOC | TYPE_DEALLOC)) != 0)
    (events,) = np.nonzero(malloc)
    if len(events):
        _pair_malloc(state, columns, events, start)
    (vm_events,) = np.nonzero(valid & is_vm)
    for index in vm_events.tolist():
        _replay_vm(state, columns, index, start + index)


def _pair_malloc(state: Replay, columns: Columns, events: I64, start: int) -> None:
    """The last event per address in this chunk decides; earlier live entries it names go.

    Sorting is by one packed ``u64`` key, ``(address − lowest) >> 4 << 22 | position in
    chunk``, so a plain sort (no argsort and gathers) puts each address's events in file order
    — valid because malloc addresses are 16-byte aligned (checked when decoding) and a chunk's
    addresses span less than 2⁴⁶; a chunk spread wider takes the slower stable argsort.
    """
    address = columns.address[events]
    low = np.min(address)
    span = int(np.max(address) - low) >> 4
    if len(columns.address) <= _POSITION_MASK + 1 and span < 1 << (64 - _POSITION_BITS):
        shift = np.uint64(_POSITION_BITS)
        keys = (((address - low) >> np.uint64(4)) << shift) | events.astype(np.uint64)
        keys.sort()
        sorted_address = ((keys >> shift) << np.uint64(4)) + low
        positions = (keys & np.uint64(_POSITION_MASK)).astype(np.int64)
    else:
        order = np.argsort(address, kind="stable")
        sorted_address = address[order]
        positions = events[order]
    last = np.ones(len(positions), dtype=bool)
    last[:-1] = sorted_address[1:] != sorted_address[:-1]
    final = positions[last]
    touched = sorted_address[last]
    if len(state.malloc_address):
        where = np.searchsorted(touched, state.malloc_address)
        where[where == len(touched)] = 0
        keep = touched[where] != state.malloc_address
        state.malloc_address = state.malloc_address[keep]
        state.malloc_size = state.malloc_size[keep]
        state.malloc_stack = state.malloc_stack[keep]
        state.malloc_record = state.malloc_record[keep]
    alive = np.sort(final[(columns.flags[final] & np.uint32(TYPE_ALLOC)) != 0])  # file order
    state.malloc_address = np.concatenate([state.malloc_address, columns.address[alive]])
    state.malloc_size = np.concatenate([state.malloc_size, columns.argument[alive]])
    state.malloc_stack = np.concatenate([state.malloc_stack, columns.stack[alive]])
    records = alive.astype(np.int64) + start
    state.malloc_record = np.concatenate([state.malloc_record, records])


def _replay_vm(state: Replay, columns: Columns, index: int, record: int) -> None:
    """One VM event: a region ``(size, stack, flags, record)`` keyed by start address."""
    flags = int(columns.flags[index])
    address, size = int(columns.address[index]), int(columns.argument[index])
    regions = state.vm
    if flags & TYPE_VM_DEALLOCATE and size == 0:
        regions.pop(address, None)
        return
    _unmap(regions, address, address + max(size, 1))
    if flags & TYPE_VM_ALLOCATE and size > 0:
        regions[address] = (size, int(columns.stack[index]), flags, record)


def _unmap(regions: dict[int, tuple[int, int, int, int]], low: int, high: int) -> None:
    """Remove ``[low, high)`` from the regions, trimming or splitting the ones it overlaps."""
    starts = sorted(regions)
    first = max(bisect.bisect_right(starts, low) - 1, 0)
    for start in starts[first:]:
        if start >= high:
            break
        size, stack, flags, record = regions[start]
        end = start + size
        if end <= low:
            continue
        del regions[start]
        if start < low:
            regions[start] = (low - start, stack, flags, record)
        if end > high:
            regions[high] = (end - high, stack, flags, record)


def read_index(path: str | os.PathLike[str], *, at: int | None = None) -> Replay:
    """``replay`` of a file through ``mmap`` (the log is never read into memory whole)."""
    source = os.fspath(path)
    try:
        with open(source, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            if size == 0:
                raise FormatError(source, "empty index file")
            with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                return replay(mapped, at=at, source=source)
    except OSError as exc:
        raise FormatError(source, f"cannot read: {exc.strerror}") from exc


_TYPE_NAMES: Final = {1: "generic", 2: "alloc", 4: "dealloc", 16: "vm_allocate",
                      32: "vm_deallocate", 144: "vm_allocate+mapped",
                      160: "vm_deallocate+mapped"}  # fmt: skip


def dump_lines(data: bytes | memoryview, *, limit: int = 10_000) -> list[str]:
    """Record-by-record text of an index file (``hawkwatch debug dump``), first ``limit``."""
    layout, score = detect_layout(data)
    if not layout:
        return ["no whole record"]
    dtype = LAYOUTS[layout]
    total = len(data) // dtype.itemsize
    count = min(total, limit)
    columns = decode(np.frombuffer(data, dtype=dtype, count=count), layout)
    lines = [f"layout: {DESCRIPTIONS[layout]} ({score:.0%} of the sample valid); {total:,} records"]
    for index in range(count):
        flags = int(columns.flags[index])
        kind = _TYPE_NAMES.get(flags & 0xFF, f"type 0x{flags & 0xFF:x}")
        tag = f" tag {flags >> 24}" if flags >> 24 else ""
        stack = int(columns.stack[index])
        when = payload_time_us(int(columns.time_us[index])) if columns.time_us is not None else None
        lines.append(
            f"{index:>9} {kind:<22}{tag} 0x{int(columns.address[index]):x} "
            f"arg {int(columns.argument[index]):,} stack "
            f"{'-' if stack == NO_STACK else stack}"
            + (f" t+{when} us" if when is not None else "")
            + ("" if columns.valid[index] else "   <- not a valid record")
        )
    if count < total:
        lines.append(f"… {total - count:,} more records")
    return lines
