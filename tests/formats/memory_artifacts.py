"""Writers of iOS memory artifacts, byte for byte from ``formats/msl.md`` and ``hawkeye.md`` §7.

Independent of the readers: tables are filled with libmalloc's own insertion (hash probing,
§4.3 / §7.3), records are packed with ``struct`` per layout, and the expected live allocations
are tracked by the simulated process itself (``Process``), not derived from the log.
"""

from __future__ import annotations

import gzip
import plistlib
import struct
from dataclasses import dataclass, field

DISGUISE = 0x5555
ALLOC, DEALLOC, VM_ALLOCATE, VM_DEALLOCATE, MAPPED = 2, 4, 16, 32, 128


class MslTableWriter:
    """libmalloc's backtrace uniquing table (§4): ``full166``, ``framework`` or ``lite`` nodes."""

    def __init__(self, mode: str = "full166", num_pages: int = 1, page: int = 16384) -> None:
        self.mode = mode
        self.num_pages = num_pages
        self.table_size = num_pages * page
        self.num_nodes = (self.table_size // 16) & ~1
        self.untouchable = 0
        self.max_collide = 19
        self.nodes: list[list[int]] = [[0, 0, 0] for _ in range(self.num_nodes)]  # pc, parent, n
        self.sentinel = 0xFFFFFFFFFFFFFFFF if mode == "full166" else 0xFFFFFFFF

    def add(self, frames: list[int], size: int = 0) -> int:
        """Enter ``frames`` (hottest first); the stack id. Lite tables add ``size`` per node."""
        parent = self.sentinel
        modulus = self.num_nodes - self.untouchable - 1
        mult = (self.num_nodes - self.untouchable) // (self.max_collide * 2 + 1)
        for pc in reversed(frames):
            h = self.untouchable + (((parent << 4) ^ (pc >> 2)) % modulus)
            for c in range(self.max_collide - 1, -1, -1):
                node = self.nodes[h]
                if node == [0, 0, 0]:
                    self.nodes[h] = [pc, parent, size if self.mode == "lite" else 1]
                    parent = h
                    break
                if node[0] == pc and node[1] == parent:
                    node[2] += size if self.mode == "lite" else 1
                    parent = h
                    break
                h += c * mult + 1
                if h >= self.num_nodes:
                    h -= self.num_nodes - self.untouchable
            else:
                raise AssertionError("test table full")
        return parent

    def release(self, stack_id: int, size: int) -> None:
        """Lite mode free: refcounts drop along the stack; a node at 0 is zeroed."""
        index = stack_id
        while True:
            node = self.nodes[index]
            parent = node[1]
            node[2] -= size
            if node[2] == 0:
                self.nodes[index] = [0, 0, 0]
            if parent == self.sentinel:
                return
            index = parent

    def node_bytes(self) -> bytes:
        out = bytearray()
        for pc, parent, n in self.nodes:
            if [pc, parent, n] == [0, 0, 0]:
                out += bytes(16)
            elif self.mode == "full166":
                out += struct.pack("<QQ", pc, parent)
            elif self.mode == "framework":
                out += struct.pack("<QII", pc, parent, n)
            else:
                w0 = pc | ((parent & 0xFFFF) << 48)
                w1 = (parent >> 16) | (n << 16)
                out += struct.pack("<QQ", w0, w1)
        return bytes(out)

    def serialized(self) -> bytes:
        """``MslUniquingTable`` blob (§5)."""
        flags = 0x2 if self.mode == "lite" else 0
        max_size = 0xFFFFFFFF if self.mode == "lite" else 0xFFFFFFFFFFFFFFFF
        header = struct.pack(
            "<QQQQQIQQB3xI", self.num_pages, self.num_nodes, self.table_size, self.untouchable,
            0x280000000, self.max_collide, 0x109000000, max_size, flags, 1,
        )  # fmt: skip
        assert len(header) == 68
        head = b"MslUniquingTable" + header
        return head + bytes(0x4000 - len(head)) + self.node_bytes()


RECORD_FORMATS = {
    "msl-166-64": "<QQQ",
    "msl-166-32": "<IIQ",
    "msl-framework-64": "<QQQII",
    "msl-framework-32": "<IIQII",
}


def msl_record(  # noqa: PLR0917
    layout: str, flags: int, address: int, argument: int, stack: int, t_us: int
) -> bytes:
    disguised = address ^ DISGUISE
    if layout.startswith("msl-166"):
        oaf = (stack & 0xFFFFFFFFFFFF) | ((flags & 0xFF) << 56) | ((flags & 0xFF000000) << 24)
        return struct.pack(RECORD_FORMATS[layout], argument, disguised, oaf)
    payload = 0xFFFFFFFFFFFFFFFF if stack is None else (stack << 42) | (t_us << 3) | 1
    return struct.pack(RECORD_FORMATS[layout], argument, disguised, payload, flags, 0)


@dataclass
class Process:
    """A simulated process under MallocStackLogging: writes records, knows what is live."""

    layout: str = "msl-framework-64"
    table: MslTableWriter = field(default_factory=lambda: MslTableWriter("framework"))
    thread_frame: int | None = None
    records: list[bytes] = field(default_factory=list)
    malloc: dict[int, tuple[int, tuple[int, ...]]] = field(default_factory=dict)
    vm: dict[int, tuple[int, tuple[int, ...], str]] = field(default_factory=dict)
    clock_us: int = 0
    history: list[dict] = field(default_factory=lambda: [{}])

    def _log(self, flags: int, address: int, argument: int, frames: tuple[int, ...]) -> None:
        stored = [*frames, self.thread_frame] if self.thread_frame is not None else list(frames)
        stack = self.table.add(stored)
        self.clock_us += 7
        self.records.append(msl_record(self.layout, flags, address, argument, stack, self.clock_us))

    def alloc(self, address: int, size: int, frames: tuple[int, ...]) -> None:
        self._log(ALLOC, address, size, frames)
        self.malloc[address] = (size, frames)
        self.history.append(self.expected())

    def free(self, address: int, frames: tuple[int, ...]) -> None:
        self._log(DEALLOC, address, 0, frames)
        self.malloc.pop(address, None)
        self.history.append(self.expected())

    def realloc(self, old: int, new: int, size: int, frames: tuple[int, ...]) -> None:
        self.free(old, frames)
        self.alloc(new, size, frames)

    def vm_allocate(  # noqa: PLR0917
        self, address: int, size: int, tag: int, frames: tuple[int, ...], category: str,
        mapped: bool = False,
    ) -> None:  # fmt: skip
        flags = VM_ALLOCATE | (MAPPED if mapped else 0) | (tag << 24)
        self._log(flags, address, size, frames)
        self.vm[address] = (size, frames, category)
        self.history.append(self.expected())

    def vm_deallocate(self, address: int, size: int, frames: tuple[int, ...]) -> None:
        """Unmaps ``[address, address+size)``; the expectation is trimmed like ``munmap``."""
        self._log(VM_DEALLOCATE, address, size, frames)
        for start, (length, stack, category) in sorted(self.vm.items()):
            end = start + length
            if end <= address or start >= address + size:
                continue
            del self.vm[start]
            if start < address:
                self.vm[start] = (address - start, stack, category)
            if end > address + size:
                self.vm[address + size] = (end - address - size, stack, category)
        self.history.append(self.expected())

    def expected(self) -> dict[tuple[tuple[int, ...], str], tuple[int, int]]:
        """``(frames innermost first, category) -> (bytes, count)`` of what is live now."""
        out: dict[tuple[tuple[int, ...], str], tuple[int, int]] = {}
        for size, frames in self.malloc.values():
            b, n = out.get((frames, "malloc"), (0, 0))
            out[(frames, "malloc")] = (b + size, n + 1)
        for size, frames, category in self.vm.values():
            b, n = out.get((frames, category), (0, 0))
            out[(frames, category)] = (b + size, n + 1)
        return out

    def index_bytes(self) -> bytes:
        return b"".join(self.records)


def scenario(process: Process) -> list[dict]:
    """Allocations, frees, reallocs and VM events; the expectation after each record (index i:
    live after the first i records)."""
    narrow = process.layout.endswith("-32")
    m, v = (0x10000000, 0x20000000) if narrow else (0x600000000000, 0x280000000)
    a = (0x100004F10, 0x100003A2C, 0x1A0001000)
    b = (0x100005004, 0x100003A2C, 0x1A0001000)
    c = (0x100006008, 0x1A0001000)

    def step(call, *args):  # type: ignore[no-untyped-def]
        call(*args)

    step(process.alloc, m + 0x10000, 1000, a)
    step(process.alloc, m + 0x10400, 2000, a)
    step(process.alloc, m + 0x20000, 600_000, b)
    step(process.free, m + 0x10000, c)
    step(process.realloc, m + 0x10400, m + 0x30000, 5000, b)
    step(process.alloc, m + 0x10000, 48, c)  # address reused after its free
    step(process.vm_allocate, v, 0x100000, 88, a, "VM: IOSURFACE")
    step(process.vm_allocate, v + 0x1000000, 0x40000, 0, c, "VM: mapped file", True)
    step(process.vm_allocate, v + 0x2000000, 0x30000, 0, b, "VM: anonymous")
    step(process.vm_deallocate, v + 0x40000, 0x10000, c)  # splits the IOSurface region
    step(process.vm_deallocate, v + 0x1000000, 0x40000, c)  # removes the mapped file
    step(process.free, m + 0x990000, c)  # never logged as allocated: ignored
    assert len(process.history) == len(process.records) + 1
    return process.history


# --- MTHawkeye Allocations (hawkeye.md §7) ---------------------------------------------------


class HawkeyeStacksWriter:
    """``stacks_records_raw``: 8-byte slots, pc bits 0–35, parent 36–63, root ``0xFFFFFFF``."""

    def __init__(self, num_pages: int = 1, page: int = 16384) -> None:
        self.num_pages = num_pages
        self.table_size = num_pages * page
        self.num_nodes = (self.table_size // 8) & ~1
        self.max_collide = 20
        self.slots = [0] * self.num_nodes

    def add(self, frames: list[int]) -> int:
        parent = 0xFFFFFFF
        modulus = self.num_nodes - 1
        mult = self.num_nodes // (self.max_collide * 2 + 1)
        for pc in reversed(frames):
            h = ((parent << 4) ^ (pc >> 2)) % modulus
            value = pc | (parent << 36)
            for c in range(self.max_collide - 1, -1, -1):
                if self.slots[h] == 0:
                    self.slots[h] = value
                    parent = h
                    break
                if self.slots[h] == value:
                    parent = h
                    break
                h += c * mult + 1
                if h >= self.num_nodes:
                    h -= self.num_nodes
            else:
                raise AssertionError("test table full")
        return parent

    def file_bytes(self) -> bytes:
        header = struct.pack(
            "<QIIIIIQIQB3xQ", 0x10B000000, 60 + 8 * self.num_nodes, self.num_pages,
            self.num_nodes, self.table_size, 0, 0x10C000000, self.max_collide, 0xFFFFFFFF, 1,
            0x10C000000,
        )  # fmt: skip
        assert len(header) == 60, len(header)
        return header + struct.pack(f"<{self.num_nodes}Q", *self.slots)


def splay_file(nodes: list[tuple[int, int, int, int, int, int]], freed: int = 0) -> bytes:
    """``*_records_raw``: ``(address, size, category pointer, stack id, tag, flags)`` per live
    node at indices 1…, then ``freed`` deleted nodes (address 0, stack word kept)."""
    count = len(nodes) + freed
    max_index = max(count + 1, 8)
    header = struct.pack("<IIIIQQIIQ", 1, count, max_index, 0, 0x10D000000, 0, 0, 0, 0x10E000000)
    body = bytes(40)  # index 0 is never used
    for address, size, category, stack, tag, flags in nodes:
        body += struct.pack(
            "<IIIIQQQ", 0, 0, 0, 0, address | (1 << 36), category | (size << 36),
            stack | (tag << 48) | (flags << 56),
        )  # fmt: skip
    for offset in range(freed):
        index = len(nodes) + 1 + offset
        body += struct.pack("<IIIIQQQ", 0, 0, 0, 0, index << 36, 0, 5 | (2 << 56))
    data = header + body
    size = 48 + 40 * max_index
    return data + bytes(-(-size // 16384) * 16384 - len(data))


# --- .memgraph (msl.md §6) --------------------------------------------------------------------


def blob(payload: bytes) -> bytes:
    compressed = gzip.compress(payload)
    return struct.pack("<IIIHH", 16, len(compressed), len(payload), 1, 1) + compressed


def keyed_archive(root: dict, classname: str) -> bytes:
    """An ``NSKeyedArchiver`` binary plist whose root object has ``root``'s keys."""
    objects: list = ["$null"]

    def put(value):  # type: ignore[no-untyped-def]
        objects.append(value)
        return plistlib.UID(len(objects) - 1)

    encoded = {}
    for key, value in root.items():
        if isinstance(value, bytes | str):
            encoded[key] = put(value)
        else:
            encoded[key] = value
    root_index = len(objects)
    objects.append(encoded)
    class_uid = put({"$classname": classname, "$classes": [classname, "NSObject"]})
    encoded["$class"] = class_uid
    archive = {
        "$archiver": "NSKeyedArchiver",
        "$version": 100000,
        "$top": {"root": plistlib.UID(root_index)},
        "$objects": objects,
    }
    return plistlib.dumps(archive, fmt=plistlib.FMT_BINARY)


def memgraph_bytes(
    table: MslTableWriter, node_stacks: list[int], images_text: str, description: str
) -> bytes:
    reader = keyed_archive(
        {
            "backtraceUniquingTableContents": blob(table.node_bytes()),
            "backtraceUniquingTableSize": len(table.node_bytes()),
            "backtraceUniquingTableFlags": 4,
            "coldestFrameIsNotThreadId": True,
            "nodeToStackIdTable": blob(struct.pack(f"<{len(node_stacks)}I", *node_stacks)),
            "classVersion": 1,
        },
        "VMUGraphStackLogReader",
    )
    images = keyed_archive({"NS.string": images_text}, "NSString")
    info = {
        "processDescriptionString": description,
        "processName": "Demo",
        "pid": 426,
        "binaryImagesDescription": blob(images),
        "stackLogReader": blob(reader),
        "physFootprint": 52_428_800,
        "physFootprintPeak": 60_000_000,
        "regionCount": 512,
        "vmPageSize": 16384,
    }
    document = {
        "options": {},
        "details": {"processGraphInfo": info, "directedGraphInfo": {}, "objectGraphInfo": {}},
        "graphEncodingVersion": 2,
        "graphCompatibilityVersion": 2,
        "graphIs64bit": True,
        "edges": b"",
        "nodes": b"",
        "nodeNamespaceSize": len(node_stacks),
        "edgeNamespaceSize": 0,
    }
    return plistlib.dumps(document, fmt=plistlib.FMT_BINARY)
