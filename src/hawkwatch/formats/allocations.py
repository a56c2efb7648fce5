"""One entry point for every live-allocation artifact: which reader a path needs.

``.memgraph`` files (binary plist), MTHawkeye ``allocations/`` folders (or the session folder
holding one), MallocStackLogging log folders and single ``.index`` files. The readers need
numpy (extra ``ios-memory``); its absence is one clear error naming the extra. memray captures
(Python and native allocations of a Python program) need memray.
"""

from __future__ import annotations

from pathlib import Path

from hawkwatch.errors import FormatError, HawkwatchError
from hawkwatch.model import Parsed
from hawkwatch.model.allocations import LiveAllocations


class NumpyExtraMissing(HawkwatchError):
    """The readers of iOS memory artifacts need numpy."""

    exit_code = 2


def read_allocations(
    path: str | Path, *, at: int | None = None, since: int | None = None
) -> Parsed[LiveAllocations]:
    """Live allocations of ``path``; ``at`` replays only that many records of an MSL log,
    ``since`` adds the snapshot after that many records as the baseline (growth)."""
    path = Path(path)
    if path.is_file():
        from hawkwatch.formats import memray_capture

        if memray_capture.looks_like_memray(path):
            _no_time_travel(at if at is not None else since, path, "memray capture")
            return memray_capture.read_memray(path)
    try:
        from hawkwatch.formats import hawkeye_allocations, memgraph, msl_folder
    except ImportError as exc:
        raise NumpyExtraMissing(
            f"reading iOS memory artifacts needs numpy: pip install 'hawkwatch[ios-memory]' ({exc})"
        ) from exc
    if not path.exists():
        raise FormatError(str(path), "no such file or folder")
    if path.is_file():
        if path.name.endswith(".index"):
            return msl_folder.read_msl_folder(path.parent, at=at, index=path, since=since)
        with path.open("rb") as file:
            head = file.read(len(memgraph.MAGIC))
        if head == memgraph.MAGIC or path.suffix == ".memgraph":
            _no_time_travel(at if at is not None else since, path, ".memgraph")
            return memgraph.read_memgraph(path)
        raise FormatError(
            str(path), "not a .memgraph or a MallocStackLogging .index file; pass its folder"
        )
    if hawkeye_allocations.allocations_folder(path) is not None:
        _no_time_travel(at if at is not None else since, path, "MTHawkeye Allocations folder")
        return hawkeye_allocations.read_allocations_folder(path)
    if msl_folder.is_msl_folder(path):
        return msl_folder.read_msl_folder(path, at=at, since=since)
    raise FormatError(
        str(path),
        "no allocation data here: expected a .memgraph, an MTHawkeye allocations/ folder "
        "(malloc_records_raw) or a MallocStackLogging folder (stack-logs.*.index, "
        "MslUniquingTable)",
    )


def _no_time_travel(at: int | None, path: Path, what: str) -> None:
    if at is not None:
        raise FormatError(
            str(path), f"a {what} holds live allocations only: --at/--since need an MSL log"
        )
