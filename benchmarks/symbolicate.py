"""Symbolication throughput: hawkwatch's SymCache path against one llvm-symbolizer process.

Run: python benchmarks/symbolicate.py [--functions 4000] [--addresses 100000] [--pairs 5]
         [--distinct 2000] [--workdir DIR]

Needs the ``symbols`` extra, PyPI ``ziglang`` and Debian's ``llvm`` (dsymutil, llvm-symbolizer).

1. Generates a C file of ``--functions`` functions (loops, an always-inline helper, calls),
   compiles it for arm64 macOS with zig's clang (``-g -O1``), links a dylib and runs dsymutil:
   a dSYM with about 1.7 MB of code for 4,000 functions. ``--workdir`` keeps and reuses it.
2. One-time cost: ``SymbolStore.add(dSYM)`` (SymCache build + write), median of 3 fresh stores.
3. ``--addresses`` distinct instruction addresses, drawn without replacement over ``__text``,
   made runtime addresses with a slide. Two contenders, alternating (warm-up, then ``--pairs``
   rounds, order swapped every round):
     hawkwatch   a fresh ``Symbolicator`` (opens the stored SymCache) resolving every address
                 to its demangled SourceLocation chain (function, file, line, inlined); the
                 SymCache is read by hawkwatch's own reader (``symbols/symcache_file.py``) when
                 it knows the version, else through symbolic (the line "reader:" says which)
     llvm        one ``llvm-symbolizer --obj DWARF --adjust-vma SLIDE`` process fed every
                 address on stdin; timed to its exit ("process"), and again including turning
                 its text output into Python tuples ("+ parse"), which a tool using it must do
   Reported: frames/s of each, and the median (min–max) of the per-round ratios.
4. The same with ``--addresses`` frames drawn from ``--distinct`` addresses (crash stacks
   repeat: the same frames recur across threads and reports); hawkwatch answers repeats from
   its memo, llvm-symbolizer resolves each line it is given.
5. Agreement: function and line of every frame, hawkwatch vs llvm-symbolizer, on all addresses.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hawkwatch.model.crash import CrashImage, SourceLocation
from hawkwatch.symbols import Symbolicator, SymbolStore

LOAD = 0x104C00000  # the dylib's runtime load address; its __TEXT vmaddr is 0, so slide = LOAD


def generate(functions: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    out = [
        "#include <stdint.h>",
        "static inline __attribute__((always_inline)) uint64_t mix(uint64_t a, uint64_t b) {",
        "    a ^= b * 0x9E3779B97F4A7C15ull;",
        "    return (a << 7) | (a >> 57);",
        "}",
    ]
    out += [f"uint64_t f{i}(uint64_t, uint64_t);" for i in range(functions)]
    for i in range(functions):
        out.append(f"__attribute__((noinline)) uint64_t f{i}(uint64_t x, uint64_t y) {{")
        out.append(f"    uint64_t acc = x + {rng.randrange(1, 1 << 30)}ull;")
        for k in range(4):
            out.append(f"    for (int i = 0; i < (int)(y & {rng.randrange(3, 15)}); i++) {{")
            out.append(f"        acc = mix(acc, y + i * {rng.randrange(1, 1000)}ull);")
            out.append("    }")
            if k == 0:
                callee = (i + 1) % functions
                out.append(
                    f"    if (acc % {rng.randrange(2, 50)} == 0) acc += f{callee}(acc, y - 1);"
                )
            else:
                out.append(f"    acc ^= acc >> {rng.randrange(1, 60)};")
        out += ["    return acc;", "}"]
    return "\n".join(out) + "\n"


def build(workdir: Path, functions: int) -> tuple[Path, Path]:
    """(dylib, dSYM) for ``functions`` generated functions; reused when already there."""
    source, lib = workdir / f"big{functions}.c", workdir / f"libbig{functions}.dylib"
    dsym = workdir / f"libbig{functions}.dylib.dSYM"
    if dsym.exists():
        return lib, dsym
    source.write_text(generate(functions))
    zig = [sys.executable, "-m", "ziglang", "cc", "-target", "aarch64-macos"]
    started = time.perf_counter()
    subprocess.run([*zig, "-g", "-O1", "-c", source, "-o", workdir / "big.o"], check=True)
    subprocess.run([*zig, "-dynamiclib", workdir / "big.o", "-o", lib], check=True)
    subprocess.run(["dsymutil", lib, "-o", dsym], check=True)
    print(f"built {lib.name} + dSYM in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return lib, dsym


def text_section(lib: Path) -> tuple[int, int]:
    out = subprocess.run(
        ["llvm-objdump", "--macho", "--section-headers", lib],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    match = re.search(r"__text\s+([0-9a-f]+)\s+([0-9a-f]+)", out)
    assert match, out
    return int(match.group(2), 16), int(match.group(1), 16)


def uuid_of(dwarf: Path) -> str:
    out = subprocess.run(
        ["llvm-dwarfdump", "--uuid", dwarf], capture_output=True, text=True, check=True
    )
    match = re.search(r"UUID: ([0-9A-F-]{36})", out.stdout)
    assert match, out.stdout
    return match.group(1)


# -- contenders --------------------------------------------------------------------------------


def run_hawkwatch(
    root: Path, image: CrashImage, addresses: list[int]
) -> tuple[float, list[tuple[SourceLocation, ...]]]:
    started = time.perf_counter()
    symbolicator = Symbolicator(SymbolStore(root))
    results = symbolicator.locations_many(image, addresses)
    return time.perf_counter() - started, results


def run_llvm(
    dwarf: Path, addresses: list[int]
) -> tuple[float, float, list[list[tuple[str, str, int]]]]:
    feed = "".join(f"0x{address:x}\n" for address in addresses).encode()
    started = time.perf_counter()
    done = subprocess.run(
        ["llvm-symbolizer", f"--obj={dwarf}", "--default-arch=arm64", f"--adjust-vma={LOAD}"],
        input=feed,
        capture_output=True,
        check=True,
    )
    process = time.perf_counter() - started
    results = []
    for block in done.stdout.decode().split("\n\n"):
        if not block:
            continue
        lines = block.split("\n")
        frames = []
        for function, where in zip(lines[::2], lines[1::2], strict=False):
            path, line, _column = where.rsplit(":", 2)
            frames.append((function, path, int(line)))
        results.append(frames)
    return process, time.perf_counter() - started, results


def measure(  # noqa: PLR0917
    label: str, root: Path, image: CrashImage, dwarf: Path, addresses: list[int], pairs: int
) -> tuple[list[tuple[SourceLocation, ...]], list[list[tuple[str, str, int]]]]:
    ours_rates, llvm_rates, llvm_parse_rates, ratios, parse_ratios = [], [], [], [], []
    n = len(addresses)
    ours_result: list[tuple[SourceLocation, ...]] = []
    llvm_result: list[list[tuple[str, str, int]]] = []
    for round_number in range(pairs + 1):  # round 0 is the warm-up
        order = ("hawkwatch", "llvm") if round_number % 2 == 0 else ("llvm", "hawkwatch")
        times: dict[str, float] = {}
        for contender in order:
            # A contender's previous answers are dropped before it runs again: 200,000 live
            # objects from the last round would otherwise be walked by the garbage collector
            # during this one (about 0.5 µs a frame), a cost no real symbolication run has.
            if contender == "hawkwatch":
                ours_result = []
                times["hawkwatch"], ours_result = run_hawkwatch(root, image, addresses)
            else:
                llvm_result = []
                times["llvm"], times["llvm+parse"], llvm_result = run_llvm(dwarf, addresses)
        if round_number == 0:
            continue
        ours_rates.append(n / times["hawkwatch"])
        llvm_rates.append(n / times["llvm"])
        llvm_parse_rates.append(n / times["llvm+parse"])
        ratios.append(times["llvm"] / times["hawkwatch"])
        parse_ratios.append(times["llvm+parse"] / times["hawkwatch"])

    def spread(values: list[float], unit: str = "") -> str:
        return f"{statistics.median(values):,.2f}{unit} ({min(values):,.2f}–{max(values):,.2f})"

    print(f"\n{label}: {n:,} frames, {pairs} alternating rounds after a warm-up")
    print(f"  hawkwatch (SymCache)        {statistics.median(ours_rates):>12,.0f} frames/s")
    print(f"  llvm-symbolizer (process)   {statistics.median(llvm_rates):>12,.0f} frames/s")
    print(f"  llvm-symbolizer (+ parse)   {statistics.median(llvm_parse_rates):>12,.0f} frames/s")
    print(f"  speed-up vs process         {spread(ratios, 'x')}")
    print(f"  speed-up vs process + parse {spread(parse_ratios, 'x')}")
    return ours_result, llvm_result


def agreement(
    ours: list[tuple[SourceLocation, ...]], theirs: list[list[tuple[str, str, int]]]
) -> tuple[int, int]:
    same = 0
    for mine, oracle in zip(ours, theirs, strict=True):
        chain = [(loc.symbol, loc.line or 0) for loc in mine]
        if chain == [(function, line) for function, _path, line in oracle]:
            same += 1
    return same, len(ours)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--functions", type=int, default=4000)
    parser.add_argument("--addresses", type=int, default=100_000)
    parser.add_argument("--distinct", type=int, default=2000)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--workdir", type=Path, help="keep (and reuse) the built dSYM here")
    args = parser.parse_args()
    for tool in ("dsymutil", "llvm-symbolizer", "llvm-objdump", "llvm-dwarfdump"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not found: apt-get install llvm")

    scratch = Path(tempfile.mkdtemp(prefix="hawkwatch-bench-symbolicate-"))
    workdir = args.workdir or scratch
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        lib, dsym = build(workdir, args.functions)
        dwarf = next((dsym / "Contents" / "Resources" / "DWARF").iterdir())
        text_start, text_size = text_section(lib)
        builds = []
        for attempt in range(3):
            root = scratch / f"store{attempt}"
            started = time.perf_counter()
            SymbolStore(root).add([dsym])
            builds.append(time.perf_counter() - started)
        root = scratch / "store0"
        cache_size = sum(p.stat().st_size for p in root.glob("*.symcache"))

        rng = random.Random(7)
        instructions = range(text_start, text_start + text_size, 4)
        count = min(args.addresses, len(instructions))
        unique = [LOAD + a for a in rng.sample(instructions, count)]
        hot = rng.sample(unique, min(args.distinct, count))
        repeated = [rng.choice(hot) for _ in range(count)]
        end = LOAD + text_start + text_size
        image = CrashImage("libbig.dylib", LOAD, end, "arm64", uuid_of(dwarf))

        print(
            f"machine: {platform.machine()}, nproc {os.cpu_count()}, "
            f"Python {sys.version.split()[0]}"
        )
        print(
            f"dSYM: {dwarf.stat().st_size / 1e6:.1f} MB DWARF, __text {text_size / 1e6:.2f} MB "
            f"({args.functions} functions); SymCache {cache_size / 1e6:.1f} MB"
        )
        print(
            f"one-time SymCache build (symbols add): median {statistics.median(builds):.3f} s "
            f"(min {min(builds):.3f}, max {max(builds):.3f}, 3 runs)"
        )
        reader = SymbolStore(root).symcache_file(image.uuid or "")
        public = "symbolic's public SymCache.lookup"
        print("reader: " + (f"hawkwatch's own (SymCache v{reader.version})" if reader else public))
        ours, theirs = measure("distinct addresses", root, image, dwarf, unique, args.pairs)
        same, total = agreement(ours, theirs)
        measure(
            f"frames drawn from {len(hot):,} distinct addresses", root, image, dwarf, repeated,
            args.pairs,
        )  # fmt: skip
        print(f"\nagreement with llvm-symbolizer (function + line chain): {same:,}/{total:,}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
