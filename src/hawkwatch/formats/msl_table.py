"""MallocStackLogging's backtrace uniquing table: the raw node array and ``MslUniquingTable``.

Spec: ``formats/msl.md`` §4–5. Nodes are 16 bytes, node ``i`` at byte ``16·i``:

* full (libmalloc 166, and the iOS 13+ framework): ``u64 pc; u32 parent`` — 166 stores a
  ``u64`` parent whose low half is the same ``u32``, the framework a ``u32 count`` after it;
  root parent ``0xFFFFFFFF``.
* lite (refcounted): ``pc = w0 & 0xFFFFFFFFFFFF``, ``parent = u32 at byte 6``,
  ``refcount = w1 >> 16`` — the bytes of live allocations whose stacks pass through the node.

The serialized form is ``"MslUniquingTable"``, the 68-byte header struct (``numNodes`` at
0x18, flags byte at 0x4C, bit 1 = lite), zero padding, and the node array at 0x4000. A stack id
is the node index of the hottest frame; unwinding follows parents (at most 512 frames). In
libmalloc 166's full mode the coldest frame is ``pthread_self() + 1``, not a PC: a table whose
roots are all ``≡ 1 (mod 8)`` holds such thread frames (a return address never is on arm64,
and every thread's root agreeing by chance is unlikely on x86_64), and they are dropped.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from hawkwatch.errors import FormatError
from hawkwatch.model.allocations import AllocationFrame, NativeFrame
from hawkwatch.model.stack import UniquingTable

MAGIC: Final = b"MslUniquingTable"
HEADER: Final = struct.Struct("<QQQQQIQQB3xI")  # 68 bytes, #pragma pack(4)
NODES_OFFSET: Final = 0x4000
NODE_SIZE: Final = 16
ROOT: Final = 0xFFFFFFFF
MAX_FRAMES: Final = 512
FLAG_LITE: Final = 0x2

U64 = npt.NDArray[np.uint64]


@dataclass(frozen=True)
class MslTable:
    """A uniquing table's nodes as columns: ``pcs``, ``parents`` (``ROOT`` for a root), and
    ``refcounts`` (lite tables: live bytes through the node, else None)."""

    pcs: U64
    parents: U64
    refcounts: U64 | None
    thread_frames: bool
    notes: tuple[str, ...] = ()

    @property
    def lite(self) -> bool:
        return self.refcounts is not None

    def __len__(self) -> int:
        return len(self.pcs)

    def unwind(self, stack_id: int) -> list[int]:
        """Frames of a stack id, hottest first (thread frame dropped); empty for a bad id."""
        frames: list[int] = []
        pcs, parents, refcounts, size = self.pcs, self.parents, self.refcounts, len(self.pcs)
        index = stack_id
        while len(frames) < MAX_FRAMES and 0 <= index < size:
            if refcounts is not None and refcounts[index] == 0:
                break
            frames.append(int(pcs[index]))
            parent = int(parents[index])
            if parent == ROOT:
                if self.thread_frames:
                    frames.pop()
                break
            index = parent
        return frames


def parse_nodes(
    data: bytes | memoryview, *, lite: bool | None = None, source: str = "<bytes>"
) -> MslTable:
    """A raw node array (memory layout); ``lite`` None decides from the nodes themselves.

    A full table keeps user-space PCs below 2⁴⁸, so bits 48–63 of the first word are zero; a lite
    node keeps the low half of its parent there, which is non-zero for almost every node.
    """
    whole = len(data) // NODE_SIZE
    notes = []
    if whole * NODE_SIZE != len(data):
        notes.append(f"{source}: table ends inside node {whole}; read {whole} whole nodes")
    words = np.frombuffer(data, dtype="<u8", count=whole * 2).reshape(whole, 2)
    w0, w1 = words[:, 0], words[:, 1]
    used = (w0 != 0) | (w1 != 0)
    if not bool(used.any()):
        raise FormatError(source, "the uniquing table holds no nodes")
    if lite is None:
        lite = bool(((w0[used] >> np.uint64(48)) != 0).any())
    if lite:
        pcs = w0 & np.uint64(0xFFFFFFFFFFFF)
        parents = (w0 >> np.uint64(48)) | ((w1 & np.uint64(0xFFFF)) << np.uint64(16))
        refcounts: U64 | None = w1 >> np.uint64(16)
    else:
        pcs = w0.copy()
        parents = w1 & np.uint64(0xFFFFFFFF)
        refcounts = None
    roots = used & (parents == np.uint64(ROOT))
    root_pcs = pcs[roots]
    thread_frames = not lite and len(root_pcs) > 0 and bool((root_pcs % np.uint64(8) == 1).all())
    if thread_frames:
        notes.append("coldest frames are thread ids (libmalloc full mode): dropped")
    return MslTable(pcs, parents, refcounts, thread_frames, tuple(notes))


def parse_serialized(data: bytes | memoryview, *, source: str = "<bytes>") -> MslTable:
    """``__mach_stack_logging_uniquing_table_serialize``'s blob (``MslUniquingTable``)."""
    if len(data) < len(MAGIC) + HEADER.size or bytes(data[: len(MAGIC)]) != MAGIC:
        raise FormatError(source, "not a serialized uniquing table (no 'MslUniquingTable' magic)")
    fields = HEADER.unpack_from(data, len(MAGIC))
    num_nodes, flags = fields[1], fields[8]
    available = max(len(data) - NODES_OFFSET, 0) // NODE_SIZE
    count = min(num_nodes, available)
    if count == 0:
        raise FormatError(source, "the serialized table has no node array", NODES_OFFSET)
    view = memoryview(data)[NODES_OFFSET : NODES_OFFSET + count * NODE_SIZE]
    table = parse_nodes(view, lite=bool(flags & FLAG_LITE), source=source)
    if count < num_nodes:
        note = f"{source}: truncated: {count:,} of {num_nodes:,} nodes present"
        table = MslTable(
            table.pcs, table.parents, table.refcounts, table.thread_frames, (*table.notes, note)
        )
    return table


def parse_table(data: bytes | memoryview, *, source: str = "<bytes>") -> MslTable:
    """Either form: serialized when it starts with the magic, else a raw node array."""
    if bytes(data[: len(MAGIC)]) == MAGIC:
        return parse_serialized(data, source=source)
    return parse_nodes(data, source=source)


class StackInterner:
    """Turns table stack ids into ids of a model ``UniquingTable``, each node converted once."""

    def __init__(self, table: MslTable, into: UniquingTable[AllocationFrame]) -> None:
        self.table = table
        self.into = into
        self._memo: dict[int, int] = {}
        self.bad_ids = 0

    def stack_id(self, msl_id: int) -> int:
        """Model id of an MSL stack id; -1 (empty stack) for an id outside the table."""
        memo = self._memo
        found = memo.get(msl_id)
        if found is not None:
            return found
        table = self.table
        pcs, parents, refcounts, size = table.pcs, table.parents, table.refcounts, len(table)
        path: list[int] = []
        index = msl_id
        parent_id = -1
        while len(path) < MAX_FRAMES and 0 <= index < size:
            known = memo.get(index)
            if known is not None:
                parent_id = known
                break
            if refcounts is not None and refcounts[index] == 0:
                break
            path.append(index)
            parent = int(parents[index])
            if parent == ROOT:
                if table.thread_frames:
                    memo[path.pop()] = -1
                break
            index = parent
        if not path and parent_id == -1 and msl_id not in memo:
            self.bad_ids += 1
        push = self.into.push
        for node in reversed(path):
            parent_id = memo[node] = push(NativeFrame(int(pcs[node])), parent_id)
        memo[msl_id] = parent_id
        return parent_id


def lite_live_bytes(table: MslTable) -> dict[int, int]:
    """Live bytes per stack id of a lite table: a node's refcount minus its children's."""
    if table.refcounts is None:
        return {}
    refcounts = table.refcounts
    valid = refcounts != 0
    has_parent = valid & (table.parents != np.uint64(ROOT)) & (table.parents < len(table))
    children = np.zeros(len(table), dtype=np.uint64)
    np.add.at(children, table.parents[has_parent].astype(np.int64), refcounts[has_parent])
    own = np.where(valid & (refcounts > children), refcounts - children, np.uint64(0))
    (ids,) = np.nonzero(own)
    return {int(i): int(own[i]) for i in ids}
