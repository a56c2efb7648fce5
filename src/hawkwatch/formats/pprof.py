"""pprof's profile format: a gzipped ``profile.proto`` message, encoded by hand.

Spec: github.com/google/pprof ``proto/profile.proto``. Only what a sampled call tree needs:

=========  ===================================================================
Profile    1 sample_type (ValueType) · 2 sample · 4 location · 5 function ·
           6 string_table · 9 time_nanos · 10 duration_nanos · 11 period_type ·
           12 period · 14 default_sample_type
ValueType  1 type (string index) · 2 unit (string index)
Sample     1 location_id (packed uint64, **leaf first**) · 2 value (packed int64)
Location   1 id · 3 address · 4 line (Line: 1 function_id · 2 line)
Function   1 id · 2 name · 3 system_name · 4 filename (string indexes)
=========  ===================================================================

``string_table[0]`` is ``""``. Values: ``samples/count`` and, when the sample interval is known,
``cpu|wall/nanoseconds`` (count × interval). A small varint writer keeps protobuf out of the
agent's and the CLI's dependencies; tests decode the output with the real ``protobuf`` package.
"""

from __future__ import annotations

import gzip
from typing import BinaryIO, Final

from hawkwatch.model.profile import CallTree, Frame, frame_label, is_thread_frame, walk_paths

output_file_extension: Final = "pb.gz"
output_is_binary: Final = True

_VARINT: Final = 0
_BYTES: Final = 2


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # int64 negatives are ten-byte two's complement
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _int(field: int, value: int) -> bytes:
    return _key(field, _VARINT) + _varint(value) if value else b""


def _bytes(field: int, payload: bytes) -> bytes:
    return _key(field, _BYTES) + _varint(len(payload)) + payload


def _packed(field: int, values: list[int]) -> bytes:
    return _bytes(field, b"".join(_varint(v) for v in values)) if values else b""


class _Strings:
    def __init__(self) -> None:
        self.table: list[str] = [""]
        self._index: dict[str, int] = {"": 0}

    def __call__(self, text: str) -> int:
        found = self._index.get(text)
        if found is None:
            found = self._index[text] = len(self.table)
            self.table.append(text)
        return found


def encode(tree: CallTree) -> bytes:
    """The uncompressed ``Profile`` message."""
    strings = _Strings()
    out = bytearray()
    interval_ns = round(tree.interval_s * 1e9)
    kind = "cpu" if tree.mode == "cpu" else "wall"
    value_types = [("samples", "count")] + ([(kind, "nanoseconds")] if interval_ns else [])
    for type_name, unit in value_types:
        out += _bytes(1, _int(1, strings(type_name)) + _int(2, strings(unit)))
    locations: dict[Frame, int] = {}
    functions: dict[tuple[str, str], int] = {}
    location_msgs: list[bytes] = []
    function_msgs: list[bytes] = []
    for path, count in walk_paths(tree):
        ids: list[int] = []
        for frame in reversed(path):  # leaf first
            location = locations.get(frame)
            if location is None:
                location = locations[frame] = len(locations) + 1
                name, filename, line = _describe(frame)
                function = functions.get((name, filename))
                if function is None:
                    function = functions[(name, filename)] = len(functions) + 1
                    function_msgs.append(
                        _int(1, function)
                        + _int(2, strings(name))
                        + _int(3, strings(name))
                        + _int(4, strings(filename))
                    )
                address = frame if isinstance(frame, int) else 0
                location_msgs.append(
                    _int(1, location)
                    + _int(3, address)
                    + _bytes(4, _int(1, function) + _int(2, line))
                )
            ids.append(location)
        values = [count] + ([count * interval_ns] if interval_ns else [])
        out += _bytes(2, _packed(1, ids) + _packed(2, values))
    for message in location_msgs:
        out += _bytes(4, message)
    for message in function_msgs:
        out += _bytes(5, message)
    if tree.start_time:
        out += _int(9, round(tree.start_time * 1e9))
    if tree.duration_s:
        out += _int(10, round(tree.duration_s * 1e9))
    if interval_ns:
        out += _bytes(11, _int(1, strings(kind)) + _int(2, strings("nanoseconds")))
        out += _int(12, interval_ns)
        out += _int(14, strings(kind))
    for text in strings.table:  # last: every string is interned by now
        out += _bytes(6, text.encode("utf-8"))
    return bytes(out)


def _describe(frame: Frame) -> tuple[str, str, int]:
    if isinstance(frame, int) or is_thread_frame(frame):
        return frame_label(frame), "", 0
    return frame.func, frame.file, frame.line


def render(tree: CallTree, file: BinaryIO) -> None:
    """Write the gzipped profile (mtime 0, so equal trees give equal bytes)."""
    file.write(gzip.compress(encode(tree), mtime=0))
