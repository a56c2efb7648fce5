"""A MallocStackLogging log folder: the index file, its uniquing table and the process's images.

What a device or Mac leaves behind when logging is on (``formats/msl.md`` §3.1, §5, §8): one
``stack-logs.<pid>.<addr>.<progname>.XXXXXX.index`` file, and — taken offline in process with
``__mach_stack_logging_uniquing_table_serialize`` — a ``MslUniquingTable`` blob under any name.
Images for symbolication come from a ``dyld-images`` file (MTHawkeye's JSON) or any text file
holding a ``Binary Images:`` block (a crash report of the same process). A lite-mode folder
(no index file, ``formats/msl.md`` §2) gives live bytes per stack from the table's refcounts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Final

import numpy as np

from hawkwatch.errors import FormatError
from hawkwatch.formats._vm_tags import MALLOC, vm_category
from hawkwatch.formats.apple_crash import parse_image_line
from hawkwatch.formats.hawkeye import parse_dyld_images
from hawkwatch.formats.hawkeye_stacks import crash_images
from hawkwatch.formats.msl import Replay, read_index
from hawkwatch.formats.msl_table import MAGIC, MslTable, StackInterner, lite_live_bytes, parse_table
from hawkwatch.model import Parsed, Skipped
from hawkwatch.model.allocations import AllocationFrame, Group, LiveAllocations, merge_groups
from hawkwatch.model.crash import CrashImage
from hawkwatch.model.stack import UniquingTable

INDEX_NAME: Final = re.compile(r"^stack-logs\.(?P<pid>\d+)\.[0-9a-f]+\.(?P<prog>.*)\.\w+\.index$")
MAX_IMAGE_TEXT: Final = 8 << 20


def is_msl_folder(folder: Path) -> bool:
    """A folder holding an index file or a serialized uniquing table."""
    return any(_is_index(path) or _is_table(path) for path in _files(folder))


def read_msl_folder(
    folder: str | Path,
    *,
    at: int | None = None,
    index: Path | None = None,
    since: int | None = None,
) -> Parsed[LiveAllocations]:
    """Live allocations of the folder's log (after ``at`` records when given); ``index``
    chooses one index file when the folder holds several (default: the largest); ``since``
    adds the snapshot after that many records as the ``baseline``."""
    folder = Path(folder)
    files = _files(folder)
    indexes = [index] if index is not None else [path for path in files if _is_index(path)]
    tables = [path for path in files if _is_table(path)]
    if not indexes and not tables:
        raise FormatError(str(folder), "no MallocStackLogging index file or uniquing table here")
    skipped: list[Skipped] = []
    notes: list[str] = []
    table = _read_table(tables, notes, skipped)
    images, arch, process_path = _images(files, skipped)
    if len(indexes) > 1:
        notes.append(f"{len(indexes)} index files: read {indexes[0].name} (the largest)")
    if not indexes:
        if table is None or not table.lite:
            raise FormatError(str(folder), "no index file, and the table is not a lite table")
        return Parsed(lite_allocations(table, images=images, arch=arch, notes=notes), skipped)
    replayed = read_index(indexes[0], at=at)
    baseline = read_index(indexes[0], at=since) if since is not None else None
    metadata = {"index": indexes[0].name}
    match = INDEX_NAME.match(indexes[0].name)
    if match:
        metadata.update(pid=match["pid"], process=match["prog"])
    live = replay_allocations(
        replayed,
        table,
        images=images,
        arch=arch,
        process_path=process_path,
        notes=notes,
        metadata=metadata,
        baseline=baseline,
    )
    if replayed.invalid:
        skipped.append(
            Skipped(
                replayed.first_invalid or 0,
                f"{replayed.invalid:,} records with an unknown type or layout were skipped "
                f"(first: record {replayed.first_invalid})",
            )
        )
    return Parsed(live, skipped)


def replay_allocations(
    replayed: Replay,
    table: MslTable | None,
    *,
    images: tuple[CrashImage, ...] = (),
    arch: str | None = None,
    process_path: str | None = None,
    notes: list[str] | None = None,
    metadata: dict[str, str] | None = None,
    baseline: Replay | None = None,
) -> LiveAllocations:
    """A replayed index as the live-allocation model, stacks unwound through ``table``;
    ``baseline`` (the same log replayed to an earlier record) becomes the snapshot's
    ``baseline``, sharing its stack table so growth can be computed."""
    notes = list(notes or [])
    notes.append(f"layout: {replayed.description} (detected)")
    if replayed.trailing_bytes:
        notes.append(
            f"index ends inside record {replayed.total_records}: "
            f"{replayed.trailing_bytes} trailing bytes ignored"
        )
    if replayed.records < replayed.total_records:
        notes.append(f"live at record {replayed.records:,} of {replayed.total_records:,}")
    stacks: UniquingTable[AllocationFrame] = UniquingTable()
    interner = StackInterner(table, stacks) if table is not None else None
    if table is None:
        notes.append("no uniquing table: stacks unknown")
    else:
        notes.extend(table.notes)

    def stack_of(msl_id: int) -> int:
        return interner.stack_id(msl_id) if interner is not None else -1

    groups = _groups(replayed, stack_of)
    before = None
    if baseline is not None:
        before = LiveAllocations(
            source=baseline.layout,
            stacks=stacks,
            groups=merge_groups(_groups(baseline, stack_of)),
            position=baseline.records,
            time_s=baseline.time_us / 1e6 if baseline.time_us is not None else None,
        )
        notes.append(f"growth since record {baseline.records:,}")
    if interner is not None and interner.bad_ids:
        notes.append(f"{interner.bad_ids:,} stack ids outside the uniquing table")
    return LiveAllocations(
        source=replayed.layout,
        stacks=stacks,
        groups=merge_groups(groups),
        images=images,
        arch=arch,
        process_path=process_path,
        position=replayed.records,
        time_s=replayed.time_us / 1e6 if replayed.time_us is not None else None,
        metadata=dict(metadata or {}),
        notes=tuple(notes),
        baseline=before,
    )


def _groups(replayed: Replay, stack_of: Callable[[int], int]) -> list[Group]:
    """One group per (stack id, category): malloc blocks summed with numpy, VM regions each."""
    groups: list[Group] = []
    if len(replayed.malloc_stack):
        ids, inverse = np.unique(replayed.malloc_stack, return_inverse=True)
        sizes = np.bincount(inverse, weights=replayed.malloc_size.astype(np.float64))
        counts = np.bincount(inverse)
        for msl_id, size, count in zip(ids.tolist(), sizes.tolist(), counts.tolist(), strict=True):
            groups.append(Group(stack_of(msl_id), MALLOC, int(size), int(count)))
    for size, msl_id, flags, _record in replayed.vm.values():
        groups.append(Group(stack_of(msl_id), vm_category(flags >> 24, flags), size, 1))
    return groups


def lite_allocations(
    table: MslTable,
    *,
    images: tuple[CrashImage, ...] = (),
    arch: str | None = None,
    notes: list[str] | None = None,
) -> LiveAllocations:
    """Live bytes per stack from a lite table's refcounts (counts are not kept in lite mode)."""
    stacks: UniquingTable[AllocationFrame] = UniquingTable()
    interner = StackInterner(table, stacks)
    groups = [
        Group(interner.stack_id(msl_id), MALLOC, size, 0)
        for msl_id, size in lite_live_bytes(table).items()
    ]
    return LiveAllocations(
        source="msl-lite-table",
        stacks=stacks,
        groups=merge_groups(groups),
        images=images,
        arch=arch,
        notes=(*(notes or []), "lite mode: live bytes per stack from refcounts, no counts"),
    )


def _files(folder: Path) -> list[Path]:
    try:
        entries = sorted(folder.iterdir())
    except OSError as exc:
        raise FormatError(str(folder), f"cannot list: {exc.strerror}") from exc
    files = [path for path in entries if path.is_file()]
    return sorted(files, key=lambda path: -path.stat().st_size if _is_index(path) else 0)


def _is_index(path: Path) -> bool:
    return path.name.endswith(".index")


def _is_table(path: Path) -> bool:
    try:
        with path.open("rb") as file:
            return file.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def _read_table(tables: list[Path], notes: list[str], skipped: list[Skipped]) -> MslTable | None:
    for path in tables:
        try:
            table = parse_table(path.read_bytes(), source=str(path))
        except FormatError as exc:
            skipped.append(Skipped(0, str(exc)))
            continue
        except OSError as exc:
            skipped.append(Skipped(0, f"{path}: cannot read: {exc.strerror}"))
            continue
        notes.append(f"uniquing table: {path.name}, {len(table):,} nodes")
        return table
    return None


def _images(
    files: list[Path], skipped: list[Skipped]
) -> tuple[tuple[CrashImage, ...], str | None, str | None]:
    """Images from ``dyld-images`` or the first text file with a ``Binary Images:`` block."""
    for path in files:
        if path.name == "dyld-images":
            parsed = parse_dyld_images(path.read_bytes(), source=str(path))
            skipped.extend(parsed.skipped)
            arch = parsed.value.arch.split()[0] if parsed.value.arch else None
            images = crash_images(parsed.value)
            return tuple(images), arch, images[0].path if images else None
    for path in files:
        if _is_index(path) or _is_table(path) or path.stat().st_size > MAX_IMAGE_TEXT:
            continue
        with path.open("rb") as file:
            text = file.read().decode("utf-8", errors="replace")
        if "Binary Images:" in text:
            return parse_binary_images(text)
    return (), None, None


def parse_binary_images(text: str) -> tuple[tuple[CrashImage, ...], str | None, str | None]:
    """Images, architecture and main executable of a crash-report ``Binary Images:`` block."""
    body = text.split("Binary Images:", 1)[-1]
    images = [image for line in body.splitlines() if (image := parse_image_line(line))]
    arch = next((image.arch for image in images if image.arch), None)
    process = re.search(r"^Path:\s*(.+)$", text, re.MULTILINE)
    path = process.group(1).strip() if process else (images[0].path if images else None)
    return tuple(images), arch, path
