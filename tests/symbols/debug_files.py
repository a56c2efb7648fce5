"""Real debug files for the symbolication tests, built once per test session.

``sources/app.c`` and ``sources/crashlib.cpp`` are compiled for arm64 macOS with zig's clang
(PyPI ``ziglang``) into an executable and a dylib, and Debian's ``dsymutil`` links their DWARF
into dSYM bundles — the files an iOS build produces. The addresses the tests put in crash
reports come from ``llvm-objdump``'s disassembly (the crashing store inside the inlined
``hawk::deep``, the return addresses after each ``bl``), the expected lines from ``@name``
markers in the sources. ``llvm-symbolizer`` is the independent oracle.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

SOURCES = Path(__file__).parent / "sources"
APP_LOAD = 0x104A00000  # where the "device" loaded the executable (its __TEXT vmaddr: 0x100000000)
LIB_LOAD = 0x105C40000  # and the dylib (__TEXT vmaddr 0)
DYLD_LOAD = 0x180DE1000  # an image with no debug file anywhere
IMAGE_SIZE = 0x8000


@dataclass(frozen=True)
class Built:
    """The test binaries, their dSYMs, UUIDs and the file addresses the tests crash at."""

    folder: Path
    app: Path
    app_dsym: Path
    lib: Path
    lib_dsym: Path
    elf: Path
    lib_x86_64: Path  # the dylib built for x86_64 macOS (DWARF left in its .o: symbol table only)
    app_uuid: str  # dashed, uppercase, as llvm-dwarfdump prints it
    lib_uuid: str
    app_vmaddr: int
    lib_vmaddr: int
    crash_pc: int  # file address in the dylib: the store inside inlined hawk::deep
    crash_here_start: int  # file address of hawk::crash_here
    lib_entry_return: int  # file address in the dylib: after lib_entry's call to crash_here
    caller_return: int  # file address in the executable: after caller's call to lib_entry
    lines: dict[str, int]  # marker -> line number

    def dwarf(self, dsym: Path) -> Path:
        return next((dsym / "Contents" / "Resources" / "DWARF").iterdir())


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        if not sys.platform.startswith("linux"):
            pytest.skip(f"{name} not installed (Debian package llvm)")
        raise RuntimeError(f"{name} missing: scripts/test.sh installs the Debian package llvm")
    return path


def _run(*args: str | Path) -> str:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, args))} failed:\n{done.stderr}")
    return done.stdout


def _zig(*args: str | Path) -> None:
    _run(sys.executable, "-m", "ziglang", *args)


def disassembly(path: Path) -> dict[str, list[tuple[int, str, str]]]:
    """Function name -> [(address, mnemonic, operands)] from llvm-objdump."""
    functions: dict[str, list[tuple[int, str, str]]] = {}
    current: list[tuple[int, str, str]] = []
    for line in _run(_tool("llvm-objdump"), "-d", "--no-show-raw-insn", path).splitlines():
        head = re.match(r"^([0-9a-f]+) <(.+)>:$", line)
        if head:
            current = functions.setdefault(head.group(2), [])
            continue
        insn = re.match(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$", line)
        if insn:
            current.append((int(insn.group(1), 16), insn.group(2), insn.group(3).strip()))
    return functions


def _after_call(instructions: list[tuple[int, str, str]]) -> int:
    for index, (_address, mnemonic, _ops) in enumerate(instructions):
        if mnemonic == "bl":
            return instructions[index + 1][0]
    raise AssertionError("no bl instruction")


def _uuid(path: Path) -> str:
    match = re.search(r"UUID: ([0-9A-F-]{36})", _run(_tool("llvm-dwarfdump"), "--uuid", path))
    assert match, path
    return match.group(1)


def _markers() -> dict[str, int]:
    lines: dict[str, int] = {}
    for source in SOURCES.iterdir():
        for number, text in enumerate(source.read_text().splitlines(), start=1):
            match = re.search(r"// @([\w-]+)", text)
            if match:
                lines[match.group(1)] = number
    return lines


def build(folder: Path) -> Built:
    """Compile, link and dsymutil the test sources into ``folder``."""
    dsymutil = _tool("dsymutil")
    for source in SOURCES.iterdir():
        shutil.copy(source, folder / source.name)
    arm64 = ("-target", "aarch64-macos", "-g", "-O1")
    _zig("c++", *arm64, "-c", folder / "crashlib.cpp", "-o", folder / "crashlib.o")
    _zig("cc", *arm64, "-c", folder / "app.c", "-o", folder / "app.o")
    lib, app = folder / "libcrash.dylib", folder / "app"
    _zig("cc", "-target", "aarch64-macos", "-dynamiclib", folder / "crashlib.o", "-o", lib,
         "-install_name", "@rpath/libcrash.dylib")  # fmt: skip
    _zig("cc", "-target", "aarch64-macos", folder / "app.o", lib, "-o", app)
    lib_dsym, app_dsym = folder / "libcrash.dylib.dSYM", folder / "app.dSYM"
    _run(dsymutil, lib, "-o", lib_dsym)
    _run(dsymutil, app, "-o", app_dsym)
    # an ELF shared object with a GNU build id and its DWARF inside
    _zig("c++", "-target", "x86_64-linux-gnu", "-g", "-O1", "-fPIC", "-c",
         folder / "crashlib.cpp", "-o", folder / "crashlib-x86_64.o")  # fmt: skip
    elf = folder / "libcrash.so"
    _zig("cc", "-target", "x86_64-linux-gnu", "-shared", "-Wl,--build-id=sha1",
         folder / "crashlib-x86_64.o", "-o", elf)  # fmt: skip

    lib_x86_64 = folder / "libcrash-x86_64.dylib"
    _zig("c++", "-target", "x86_64-macos", "-g", "-O1", "-c", folder / "crashlib.cpp",
         "-o", folder / "crashlib-mac-x86_64.o")  # fmt: skip
    _zig("cc", "-target", "x86_64-macos", "-dynamiclib", folder / "crashlib-mac-x86_64.o",
         "-o", lib_x86_64, "-install_name", "@rpath/libcrash.dylib")  # fmt: skip

    lib_code = disassembly(lib)
    crash_here = lib_code["__ZN4hawk10crash_hereEPii"]
    store = next(a for a, m, ops in crash_here if m == "str" and ops.endswith("[x0]"))
    return Built(
        folder=folder,
        app=app,
        app_dsym=app_dsym,
        lib=lib,
        lib_dsym=lib_dsym,
        elf=elf,
        lib_x86_64=lib_x86_64,
        app_uuid=_uuid(app),
        lib_uuid=_uuid(lib),
        app_vmaddr=0x100000000,
        lib_vmaddr=0,
        crash_pc=store,
        crash_here_start=crash_here[0][0],
        lib_entry_return=_after_call(lib_code["_lib_entry"]),
        caller_return=_after_call(disassembly(app)["_caller"]),
        lines=_markers(),
    )


def make_fat(slices: list[tuple[int, int, Path]], out: Path) -> Path:
    """A universal (fat) Mach-O of ``(cputype, cpusubtype, thin file)`` slices, 16 KiB aligned."""
    align = 14
    header = struct.pack(">II", 0xCAFEBABE, len(slices))
    body = b""
    offset = 1 << align
    for cputype, subtype, path in slices:
        data = path.read_bytes()
        header += struct.pack(">iiIII", cputype, subtype, offset, len(data), align)
        padded = data + b"\0" * (-len(data) % (1 << align))
        body += padded
        offset += len(padded)
    out.write_bytes(header + b"\0" * ((1 << align) - len(header)) + body)
    return out


def symbolizer(obj: Path, slide: int, *addresses: int) -> list[list[tuple[str, str, int]]]:
    """llvm-symbolizer's answer per runtime address: [(function, file, line)], inlined first."""
    out = _run(
        _tool("llvm-symbolizer"),
        f"--obj={obj}",
        "--default-arch=arm64",
        f"--adjust-vma={slide}",
        *[hex(address) for address in addresses],
    )
    answers = []
    for block in out.strip().split("\n\n"):
        lines = block.splitlines()
        frames = []
        for function, where in zip(lines[::2], lines[1::2], strict=True):
            path, line, _column = where.rsplit(":", 2)
            frames.append((function, Path(path).name, int(line)))
        answers.append(frames)
    return answers
