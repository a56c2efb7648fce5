"""Xcode's ``.memgraph``: process info, images and the MallocStackLogging table it embeds.

Spec: ``formats/msl.md`` §6. The file is a binary plist; ``details.processGraphInfo`` holds the
process description (crash-report-style header), ``physFootprint``/``physFootprintPeak``,
``regionCount``, and compressed blobs — a 16-byte header ``<u32 16, u32 compressed size,
u32 uncompressed size, u16 1, u16 1>`` followed by a gzip stream:

* ``binaryImagesDescription`` → an ``NSKeyedArchiver`` plist whose string is a ``Binary
  Images:`` block (the images and their UUIDs, enough to symbolicate offline);
* ``stackLogReader`` → an ``NSKeyedArchiver`` plist (``VMUGraphStackLogReader``) with
  ``backtraceUniquingTableContents`` (a blob of the raw node array, framework layout),
  ``coldestFrameIsNotThreadId`` and ``nodeToStackIdTable`` (a blob: one ``u32`` stack id per graph
  node, ``0xFFFFFFFF`` for none).

The graph's own node records (addresses, sizes, classes) use an undocumented encoding, so the
live-allocation view of a ``.memgraph`` is the number of graph nodes per allocation stack; bytes
are reported as 0 and a note says so.
"""

from __future__ import annotations

import plistlib
import re
import struct
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import numpy as np

from hawkwatch.errors import FormatError
from hawkwatch.formats._vm_tags import MALLOC
from hawkwatch.formats.msl_folder import parse_binary_images
from hawkwatch.formats.msl_table import StackInterner, parse_nodes
from hawkwatch.model import Parsed, Skipped
from hawkwatch.model.allocations import AllocationFrame, Group, LiveAllocations, merge_groups
from hawkwatch.model.stack import UniquingTable

MAGIC: Final = b"bplist00"
_PLIST_ERRORS: Final = (
    plistlib.InvalidFileException, ValueError, OverflowError, TypeError, IndexError, KeyError,
    struct.error, RecursionError,
)  # fmt: skip
BLOB_HEADER: Final = struct.Struct("<IIIHH")
MAX_BLOB_BYTES: Final = 1 << 31
MAX_ARCHIVE_DEPTH: Final = 64
NO_STACK: Final = 0xFFFFFFFF
SOURCE: Final = "memgraph"
_INFO_KEYS: Final = (
    "processName",
    "pid",
    "physFootprint",
    "physFootprintPeak",
    "regionCount",
    "vmPageSize",
)
_ARCHES: Final = {"ARM-64": "arm64", "ARM64": "arm64", "X86-64": "x86_64", "ARM64E": "arm64e"}


def decompress_blob(data: bytes, *, source: str = "<blob>") -> bytes:
    """The payload of a compressed blob (at most its stated size, capped at 2 GiB)."""
    if len(data) < BLOB_HEADER.size:
        raise FormatError(source, "compressed blob shorter than its 16-byte header")
    header_size, compressed, uncompressed, _one, _two = BLOB_HEADER.unpack_from(data)
    if header_size != BLOB_HEADER.size:
        raise FormatError(source, f"compressed blob header size {header_size}, expected 16")
    stream = data[header_size : header_size + compressed]
    try:
        out = zlib.decompressobj(wbits=31).decompress(stream, min(uncompressed, MAX_BLOB_BYTES))
    except zlib.error as exc:
        raise FormatError(source, f"compressed blob does not inflate: {exc}") from exc
    return out


def unarchive(data: bytes, *, source: str = "<archive>") -> Any:
    """The root object of an ``NSKeyedArchiver`` plist as plain dicts, lists, str and bytes."""
    try:
        archive = plistlib.loads(data)
    except _PLIST_ERRORS as exc:
        raise FormatError(source, f"not a keyed archive: {exc}") from exc
    if not isinstance(archive, dict) or not isinstance(archive.get("$objects"), list):
        raise FormatError(source, "not a keyed archive: no $objects")
    objects: list[Any] = archive["$objects"]
    top = archive.get("$top")
    root = top.get("root") if isinstance(top, dict) else None
    if root is None and isinstance(top, dict) and top:
        root = next(iter(top.values()))

    def resolve(value: Any, depth: int) -> Any:
        if depth > MAX_ARCHIVE_DEPTH:
            return None
        if isinstance(value, plistlib.UID):
            if not 0 <= value.data < len(objects):
                return None
            value = objects[value.data]
            if value == "$null":
                return None
        if isinstance(value, dict):
            if "NS.data" in value:
                return resolve(value["NS.data"], depth + 1)
            if "NS.string" in value:
                return resolve(value["NS.string"], depth + 1)
            if "NS.keys" in value and "NS.objects" in value:
                keys = [resolve(key, depth + 1) for key in value["NS.keys"]]
                values = [resolve(item, depth + 1) for item in value["NS.objects"]]
                return {str(k): v for k, v in zip(keys, values, strict=False)}
            if "NS.objects" in value:
                return [resolve(item, depth + 1) for item in value["NS.objects"]]
            return {
                key: resolve(item, depth + 1)
                for key, item in value.items()
                if key != "$class" and not key.startswith("$")
            }
        if isinstance(value, list):
            return [resolve(item, depth + 1) for item in value]
        return value

    return resolve(root, 0)


def parse_memgraph(data: bytes, *, source: str = "<bytes>") -> Parsed[LiveAllocations]:
    """Live allocation stacks, images and process facts of a ``.memgraph``."""
    if not data.startswith(MAGIC):
        raise FormatError(source, "not a .memgraph (no bplist00 magic)")
    try:
        document = plistlib.loads(data)
    except _PLIST_ERRORS as exc:
        raise FormatError(source, f"binary plist does not parse: {exc}") from exc
    info = _dict(_dict(document).get("details")).get("processGraphInfo")
    if not isinstance(info, dict):
        raise FormatError(source, "no details.processGraphInfo: not a .memgraph")
    skipped: list[Skipped] = []
    notes = ["layout: Xcode .memgraph (binary plist, keyed archives, gzip blobs)"]
    description = info.get("processDescriptionString")
    description = description if isinstance(description, str) else ""
    metadata = _metadata(info, description)
    images: tuple[Any, ...] = ()
    arch = _arch(description)
    images_text = _archived(info.get("binaryImagesDescription"), "binaryImagesDescription", skipped)
    text = _first_string(images_text)
    if text:
        images, image_arch, _ = parse_binary_images(text)
        arch = arch or image_arch
    process = re.search(r"^Path:\s*(.+)$", description, re.MULTILINE)
    stacks: UniquingTable[AllocationFrame] = UniquingTable()
    groups: list[Group] = []
    reader = _dict(_archived(info.get("stackLogReader"), "stackLogReader", skipped))
    contents = reader.get("backtraceUniquingTableContents")
    if isinstance(contents, bytes) and contents:
        try:
            table = parse_nodes(
                decompress_blob(contents, source=f"{source}: uniquing table"),
                lite=False,
                source=f"{source}: uniquing table",
            )
            table = replace(table, thread_frames=not reader.get("coldestFrameIsNotThreadId", True))
            notes.append(f"uniquing table: {len(table):,} nodes")
            notes.extend(table.notes)
            groups = _stack_counts(reader, StackInterner(table, stacks), skipped, source)
        except FormatError as exc:
            skipped.append(Skipped(0, str(exc)))
    else:
        notes.append("no MallocStackLogging table (recorded without malloc stack logging)")
    notes.append("graph node sizes use an undocumented encoding: counts per stack, bytes 0")
    return Parsed(
        LiveAllocations(
            source=SOURCE,
            stacks=stacks,
            groups=merge_groups(groups),
            images=tuple(images),
            arch=arch,
            process_path=process.group(1).strip() if process else None,
            metadata=metadata,
            notes=tuple(notes),
        ),
        skipped,
    )


def read_memgraph(path: str | Path) -> Parsed[LiveAllocations]:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise FormatError(str(path), f"cannot read: {exc.strerror}") from exc
    return parse_memgraph(data, source=str(path))


def _stack_counts(
    reader: dict[str, Any], interner: StackInterner, skipped: list[Skipped], source: str
) -> list[Group]:
    blob = reader.get("nodeToStackIdTable")
    if not isinstance(blob, bytes):
        return []
    try:
        raw = decompress_blob(blob, source=f"{source}: nodeToStackIdTable")
    except FormatError as exc:
        skipped.append(Skipped(0, str(exc)))
        return []
    ids = np.frombuffer(raw, dtype="<u4", count=len(raw) // 4)
    ids = ids[ids != np.uint32(NO_STACK)]
    values, counts = np.unique(ids, return_counts=True)
    return [
        Group(interner.stack_id(int(stack)), MALLOC, 0, int(count))
        for stack, count in zip(values.tolist(), counts.tolist(), strict=True)
    ]


def _archived(value: Any, key: str, skipped: list[Skipped]) -> Any:
    if not isinstance(value, bytes):
        return None
    try:
        return unarchive(decompress_blob(value, source=key), source=key)
    except FormatError as exc:
        skipped.append(Skipped(0, str(exc)))
        return None


def _first_string(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for item in items:
        found = _first_string(item)
        if found:
            return found
    return None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _metadata(info: dict[str, Any], description: str) -> dict[str, str]:
    out = {key: str(info[key]) for key in _INFO_KEYS if isinstance(info.get(key), int | str)}
    for line in description.splitlines():
        name, colon, value = line.partition(":")
        if colon and name.strip() in {"Identifier", "Version", "OS Version", "Date/Time"}:
            out[name.strip()] = value.strip()
    return out


def _arch(description: str) -> str | None:
    match = re.search(r"^Code Type:\s*(\S+)", description, re.MULTILINE)
    return _ARCHES.get(match.group(1).upper(), match.group(1).lower()) if match else None
