"""memray captures (``memray run -o FILE``) into the shared live-allocation model.

memray records every allocation, native ones included (C extensions: numpy, lxml, …), and its
reader API gives what was still live when tracking ended (``get_leaked_allocation_records``)
with Python stacks, or hybrid Python + native stacks for captures made with ``--native``.
memray is an extra (``pip install memray``), imported only here.
"""

from __future__ import annotations

from pathlib import Path

from hawkwatch.errors import FormatError, HawkwatchError
from hawkwatch.model import Parsed
from hawkwatch.model.allocations import AllocationFrame, Group, LiveAllocations, merge_groups
from hawkwatch.model.stack import PyFrame, UniquingTable

#: memray files start with its magic, or are an LZ4 frame holding it (its default).
MAGICS = (b"memray", b"\x04\x22\x4d\x18")


class MemrayMissing(HawkwatchError):
    """Reading memray captures needs memray."""

    exit_code = 2


def looks_like_memray(path: Path) -> bool:
    with path.open("rb") as file:
        head = file.read(8)
    return head.startswith(MAGICS)


def read_memray(path: str | Path) -> Parsed[LiveAllocations]:
    """What was live at the end of a memray capture, grouped by stack and allocator."""
    try:
        import memray
    except ImportError as exc:
        raise MemrayMissing(
            f"reading memray captures needs memray: pip install memray ({exc})"
        ) from exc
    path = Path(path)
    try:
        reader = memray.FileReader(str(path))
    except (OSError, ValueError, RuntimeError) as exc:
        raise FormatError(str(path), f"not a readable memray capture ({exc})") from exc
    table: UniquingTable[AllocationFrame] = UniquingTable()
    groups = []
    native = bool(reader.metadata.has_native_traces)
    try:
        for record in reader.get_leaked_allocation_records(merge_threads=True):
            trace = record.hybrid_stack_trace() if native else record.stack_trace()
            frames = [PyFrame(str(func), str(file), int(line or 0)) for func, file, line in trace]
            category = _allocator(memray, record.allocator)
            groups.append(Group(table.add(frames), category, record.size, record.n_allocations))
    finally:
        reader.close()
    meta = reader.metadata
    return Parsed(
        LiveAllocations(
            "memray-native" if native else "memray",
            table,
            merge_groups(groups),
            process_path=None,
            metadata={
                "pid": str(meta.pid),
                "command_line": str(meta.command_line),
                "peak_memory": str(meta.peak_memory),
                "total_allocations": str(meta.total_allocations),
            },
            notes=("live at the end of the capture (memray's leaked allocations)",),
        ),
        [],
    )


def _allocator(memray: object, value: object) -> str:
    try:
        return str(memray.AllocatorType(value).name)  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return str(value)
