"""MTHawkeye's Allocations files: live malloc blocks and VM regions with their stacks.

Spec: ``formats/hawkeye.md`` §7 (MTHawkeye 0.12.8) and §5.1 (``dyld-images``). An
``allocations/`` folder (in a session folder, or given directly) holds

* ``malloc_records_raw`` / ``vm_records_raw``: a splay tree, 48-byte header (``u32 root_index
  @0; u32 node_index @4; u32 max_index @8`` …) then 40-byte nodes from offset 48:
  ``u64 @16``: address bits 0–35 / count 36–63; ``u64 @24``: category pointer 0–35 / size
  36–63 (28 bits: sizes ≥ 256 MiB wrap); ``u64 @32``: stack id 0–47 / VM tag 48–55 / type
  flags 56–63. Live nodes are indices 1 … ``node_index`` with a non-zero stack word and
  address (freed slots keep their stack word — MTHawkeye's own reader counts them; we do not).
* ``stacks_records_raw``: 60-byte header (``u32 numNodes @16``), then 8-byte slots from offset
  60: return address bits 0–35, parent slot 36–63, root parent ``0xFFFFFFF``.

Category pointers point at class-name strings inside the app's images; offline they are named
by image and offset (``type at App+0x1c2f0``), VM regions by their user tag.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Final

import numpy as np

from hawkwatch.errors import FormatError
from hawkwatch.formats._vm_tags import MALLOC, vm_category
from hawkwatch.formats.hawkeye import read_dyld_images
from hawkwatch.formats.hawkeye_stacks import crash_images
from hawkwatch.formats.msl_table import ROOT, MslTable, StackInterner
from hawkwatch.model import Parsed, Skipped
from hawkwatch.model.allocations import AllocationFrame, Group, LiveAllocations, merge_groups
from hawkwatch.model.crash import CrashImage
from hawkwatch.model.stack import UniquingTable

MALLOC_NAME: Final = "malloc_records_raw"
VM_NAME: Final = "vm_records_raw"
STACKS_NAME: Final = "stacks_records_raw"
TREE_HEADER: Final = struct.Struct("<III")
TREE_HEADER_SIZE: Final = 48
NODE: Final = np.dtype(
    [("links", "<u4", 3), ("pad", "<u4"), ("address", "<u8"), ("category", "<u8"), ("stack", "<u8")]
)
TABLE_HEADER_SIZE: Final = 60
TABLE_ROOT: Final = 0xFFFFFFF
LOW36: Final = (1 << 36) - 1
SOURCE: Final = "mthawkeye-allocations"


def allocations_folder(path: Path) -> Path | None:
    """``path`` or its ``allocations/`` child when it holds MTHawkeye's raw files."""
    for folder in (path, path / "allocations"):
        if (folder / MALLOC_NAME).is_file() or (folder / VM_NAME).is_file():
            return folder
    return None


def parse_tree(data: bytes, *, source: str = "<bytes>") -> tuple[np.ndarray, list[Skipped]]:
    """Live nodes of a splay-tree file (structured ``NODE`` array) and what was cut off."""
    if len(data) < TREE_HEADER_SIZE:
        raise FormatError(source, "shorter than the 48-byte splay-tree header")
    _root, node_index, _max_index = TREE_HEADER.unpack_from(data)
    available = (len(data) - TREE_HEADER_SIZE) // NODE.itemsize
    wanted = node_index + 1
    skipped = []
    if wanted > available:
        skipped.append(
            Skipped(
                available,
                f"{source}: header says {node_index:,} nodes, the file holds {available - 1:,}",
            )
        )
    count = min(wanted, available)
    nodes = np.frombuffer(data, dtype=NODE, count=count, offset=TREE_HEADER_SIZE)[1:]
    live = ((nodes["address"] & np.uint64(LOW36)) != 0) & (nodes["stack"] != 0)
    return nodes[live], skipped


def parse_stacks(data: bytes, *, source: str = "<bytes>") -> MslTable:
    """``stacks_records_raw`` as a uniquing table (8-byte slots widened to the MSL shape)."""
    if len(data) < TABLE_HEADER_SIZE + 8:
        raise FormatError(source, "shorter than the 60-byte table header and one slot")
    (num_nodes,) = struct.unpack_from("<I", data, 16)
    available = (len(data) - TABLE_HEADER_SIZE) // 8
    notes = []
    if num_nodes > available:
        notes.append(f"{source}: truncated: {available:,} of {num_nodes:,} slots present")
    slots = np.frombuffer(data, dtype="<u8", count=min(num_nodes, available) or available,
                          offset=TABLE_HEADER_SIZE)  # fmt: skip
    pcs = slots & np.uint64(LOW36)
    parents = slots >> np.uint64(36)
    parents = np.where(parents == np.uint64(TABLE_ROOT), np.uint64(ROOT), parents)
    return MslTable(pcs, parents, None, False, tuple(notes))


def read_allocations_folder(path: str | Path) -> Parsed[LiveAllocations]:
    """Live allocations of an MTHawkeye ``allocations/`` folder (or the session holding it)."""
    folder = allocations_folder(Path(path))
    if folder is None:
        raise FormatError(str(path), f"no {MALLOC_NAME} or {VM_NAME} (MTHawkeye Allocations)")
    skipped: list[Skipped] = []
    notes: list[str] = ["layout: MTHawkeye Allocations raw records (malloc/vm splay trees)"]
    dyld = read_dyld_images(folder) or read_dyld_images(folder.parent)
    images: tuple[CrashImage, ...] = ()
    arch = None
    if dyld is not None:
        skipped.extend(dyld.skipped)
        images = tuple(crash_images(dyld.value))
        arch = dyld.value.arch.split()[0] if dyld.value.arch else None
    stacks: UniquingTable[AllocationFrame] = UniquingTable()
    interner = None
    try:
        table = parse_stacks((folder / STACKS_NAME).read_bytes(), source=str(folder / STACKS_NAME))
        notes.extend(table.notes)
        interner = StackInterner(table, stacks)
    except FileNotFoundError:
        notes.append(f"no {STACKS_NAME}: stacks unknown")
    except FormatError as exc:
        skipped.append(Skipped(0, str(exc)))
    groups: list[Group] = []
    for name, is_vm in ((MALLOC_NAME, False), (VM_NAME, True)):
        try:
            data = (folder / name).read_bytes()
        except FileNotFoundError:
            continue
        try:
            nodes, cut = parse_tree(data, source=str(folder / name))
        except FormatError as exc:
            skipped.append(Skipped(0, str(exc)))
            continue
        skipped.extend(cut)
        groups.extend(_groups(nodes, is_vm, interner, images))
    return Parsed(
        LiveAllocations(
            source=SOURCE,
            stacks=stacks,
            groups=merge_groups(groups),
            images=images,
            arch=arch,
            process_path=_main_executable(images),
            notes=tuple(notes),
        ),
        skipped,
    )


def _groups(
    nodes: np.ndarray, is_vm: bool, interner: StackInterner | None, images: tuple[CrashImage, ...]
) -> list[Group]:
    word = nodes["category"]
    sizes = (word >> np.uint64(36)).tolist()
    categories = (word & np.uint64(LOW36)).tolist()
    stack_word = nodes["stack"]
    stack_ids = (stack_word & np.uint64((1 << 48) - 1)).tolist()
    tags = ((stack_word >> np.uint64(48)) & np.uint64(0xFF)).tolist()
    flags = (stack_word >> np.uint64(56)).tolist()
    names: dict[tuple[int, int, int], str] = {}
    groups = []
    rows = zip(sizes, categories, stack_ids, tags, flags, strict=True)
    for size, pointer, stack, tag, flag in rows:
        key = (pointer, tag, flag) if is_vm else (pointer, 0, 0)
        name = names.get(key)
        if name is None:
            name = names[key] = vm_category(tag, flag) if is_vm else _type_name(pointer, images)
        model_id = interner.stack_id(stack) if interner is not None else -1
        groups.append(Group(model_id, name, size, 1))
    return groups


def _type_name(pointer: int, images: tuple[CrashImage, ...]) -> str:
    if pointer == 0:
        return MALLOC
    holder = max(
        (image for image in images if image.load_address <= pointer),
        key=lambda image: image.load_address,
        default=None,
    )
    if holder is None:
        return f"type at 0x{pointer:x}"
    return f"type at {holder.name}+0x{pointer - holder.load_address:x}"


def _main_executable(images: tuple[CrashImage, ...]) -> str | None:
    return images[0].path if images else None
