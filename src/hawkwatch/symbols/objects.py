"""What an object file's headers say about address arithmetic: debug id, arch, ``__TEXT`` vmaddr.

``symbolic`` finds debug ids and builds SymCaches but does not expose the segment a debug file
was linked at; atos's arithmetic (file address = runtime − load + ``__TEXT.vmaddr``) needs it, and
so does anyone cross-checking with ``llvm-symbolizer``. This module reads just enough of the
Mach-O (thin, fat, fat64) and ELF headers to give it, with the standard library only.

Layout read (all fields as in ``<mach-o/loader.h>`` / ``<mach-o/fat.h>`` / the ELF spec):

    fat:    be32 magic 0xcafebabe (0xcafebabf: 64-bit offsets), be32 nfat_arch, then per arch
            cputype, cpusubtype, offset, size, align (fat64: offset/size 64-bit + reserved)
    Mach-O: le32 magic 0xfeedfacf (64) / 0xfeedface (32), cputype, cpusubtype, filetype, ncmds,
            sizeofcmds, flags (+ reserved in 64), then load commands (cmd, cmdsize, ...):
            LC_SEGMENT_64 0x19 / LC_SEGMENT 0x1: segname[16], vmaddr; LC_UUID 0x1b: uuid[16]
    ELF:    e_ident, e_phoff, e_phnum; lowest PT_LOAD p_vaddr; PT_NOTE NT_GNU_BUILD_ID (3)
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from typing import TypeAlias

# a whole file in memory or mapped: both slice to bytes and feed struct.unpack_from
Data: TypeAlias = bytes | mmap.mmap

MH_MAGIC_64 = 0xFEEDFACF
MH_MAGIC = 0xFEEDFACE
FAT_MAGIC = 0xCAFEBABE
FAT_MAGIC_64 = 0xCAFEBABF
ELF_MAGIC = b"\x7fELF"
ZIP_MAGIC = b"PK\x03\x04"
LC_SEGMENT = 0x1
LC_SEGMENT_64 = 0x19
LC_UUID = 0x1B
PT_LOAD = 1
PT_NOTE = 4
NT_GNU_BUILD_ID = 3
# fat headers share their magic with Java class files; real universal binaries have few slices
_MAX_FAT_ARCHS = 32

_CPU_ARCH_ABI64 = 0x01000000
_CPU_TYPES = {7: "x86", 12: "arm", 7 | _CPU_ARCH_ABI64: "x86_64", 12 | _CPU_ARCH_ABI64: "arm64"}
_ARM_SUBTYPES = {9: "armv7", 11: "armv7s", 12: "armv7k", 6: "armv6"}


@dataclass(frozen=True, slots=True)
class ObjectHeader:
    """One object (one slice of a fat file): its debug id, arch and the vmaddr it was linked at."""

    debug_id: str | None
    arch: str
    text_vmaddr: int


def looks_like_object(head: bytes) -> bool:
    """True for the first bytes of a Mach-O, fat Mach-O or ELF file."""
    if head[:4] == ELF_MAGIC:
        return True
    if len(head) < 8:
        return False
    (magic_le,) = struct.unpack_from("<I", head)
    magic_be, count = struct.unpack_from(">II", head)
    if magic_le in (MH_MAGIC_64, MH_MAGIC):
        return True
    return magic_be in (FAT_MAGIC, FAT_MAGIC_64) and 0 < count <= _MAX_FAT_ARCHS


def read_headers(data: Data) -> list[ObjectHeader]:
    """Every object in ``data``; an empty list when it is not (or no longer) a readable object."""
    try:
        if data[:4] == ELF_MAGIC:
            return _elf(data)
        (magic_le,) = struct.unpack_from("<I", data)
        if magic_le in (MH_MAGIC_64, MH_MAGIC):
            header = _macho(data, 0)
            return [header] if header else []
        magic_be, count = struct.unpack_from(">II", data)
        if magic_be in (FAT_MAGIC, FAT_MAGIC_64) and 0 < count <= _MAX_FAT_ARCHS:
            return _fat(data, count, wide=magic_be == FAT_MAGIC_64)
    except struct.error:
        return []
    return []


def _fat(data: Data, count: int, *, wide: bool) -> list[ObjectHeader]:
    found = []
    entry, layout = (32, ">iiQQII") if wide else (20, ">iiIII")
    for index in range(count):
        fields = struct.unpack_from(layout, data, 8 + index * entry)
        header = _macho(data, fields[2])
        if header:
            found.append(header)
    return found


def _arch(cputype: int, cpusubtype: int) -> str:
    name = _CPU_TYPES.get(cputype, f"cpu{cputype}")
    subtype = cpusubtype & 0x00FFFFFF
    if name == "arm64" and subtype == 2:
        return "arm64e"
    if name == "arm":
        return _ARM_SUBTYPES.get(subtype, "arm")
    return name


def _macho(data: Data, base: int) -> ObjectHeader | None:
    (magic,) = struct.unpack_from("<I", data, base)
    if magic not in (MH_MAGIC_64, MH_MAGIC):
        return None
    cputype, cpusubtype, _filetype, ncmds, _size, _flags = struct.unpack_from(
        "<iiIIII", data, base + 4
    )
    offset = base + (32 if magic == MH_MAGIC_64 else 28)
    uuid: str | None = None
    text_vmaddr = 0
    for _ in range(ncmds):
        cmd, cmdsize = struct.unpack_from("<II", data, offset)
        if cmd == LC_UUID:
            uuid = data[offset + 8 : offset + 24].hex()
        elif cmd in (LC_SEGMENT_64, LC_SEGMENT):
            name = data[offset + 8 : offset + 24].rstrip(b"\0")
            if name == b"__TEXT":
                fmt = "<Q" if cmd == LC_SEGMENT_64 else "<I"
                (text_vmaddr,) = struct.unpack_from(fmt, data, offset + 24)
        if cmdsize < 8:
            break
        offset += cmdsize
    return ObjectHeader(uuid, _arch(cputype, cpusubtype), text_vmaddr)


def _elf(data: Data) -> list[ObjectHeader]:
    wide = data[4] == 2
    endian = "<" if data[5] == 1 else ">"
    (machine,) = struct.unpack_from(endian + "H", data, 18)
    if wide:
        phoff, phentsize, phnum = (
            struct.unpack_from(endian + "Q", data, 32)[0],
            *struct.unpack_from(endian + "HH", data, 54),
        )
    else:
        phoff, phentsize, phnum = (
            struct.unpack_from(endian + "I", data, 28)[0],
            *struct.unpack_from(endian + "HH", data, 42),
        )
    lowest: int | None = None
    build_id: str | None = None
    for index in range(phnum):
        at = phoff + index * phentsize
        if wide:
            p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from(
                endian + "IIQQQQ", data, at
            )
        else:
            p_type, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from(
                endian + "IIIII", data, at
            )
        if p_type == PT_LOAD and (lowest is None or p_vaddr < lowest):
            lowest = p_vaddr
        elif p_type == PT_NOTE and build_id is None:
            build_id = _gnu_build_id(data[p_offset : p_offset + p_filesz], endian)
    arch = {0xB7: "arm64", 0x3E: "x86_64", 0x28: "arm", 0x03: "x86"}.get(machine, f"elf{machine}")
    return [ObjectHeader(build_id, arch, lowest or 0)]


def _gnu_build_id(notes: bytes, endian: str) -> str | None:
    at = 0
    while at + 12 <= len(notes):
        namesz, descsz, kind = struct.unpack_from(endian + "III", notes, at)
        name_end = at + 12 + ((namesz + 3) & ~3)
        desc = notes[name_end : name_end + descsz]
        if kind == NT_GNU_BUILD_ID and notes[at + 12 : at + 12 + namesz].rstrip(b"\0") == b"GNU":
            return desc.hex()
        at = name_end + ((descsz + 3) & ~3)
    return None
