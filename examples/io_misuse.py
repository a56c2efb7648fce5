"""File I/O done wrong four ways, each next to the right way of doing the same work.

    hawkwatch run --io --app-name io-demo -- python examples/io_misuse.py
    hawkwatch report                        # "File I/O issues": four rows, one per misuse

The I/O canary (Matrix IOCanary's rules) reports exactly the four functions named ``*_wrong``:
a big read on the asyncio loop's thread, a file read in 512-byte pieces without a buffer, a
settings file read whole on every request, and a file dropped without being closed. The
``*_right`` functions do the same work without reporting anything: the big read in a worker
thread, the same small reads through Python's buffer, the settings read once and cached, the
file closed by a ``with`` block. ``--big-mb`` sets the size of the big file (default 48 MB,
which takes longer than the loop rule's 13 ms to read on any current machine).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import tempfile
from pathlib import Path

REQUESTS = 5


# -- 1. a big read on the loop thread ---------------------------------------------------------


def read_report(path: Path) -> int:
    with open(path, "rb") as f:
        return len(f.read())


async def load_report_wrong(path: Path) -> int:
    with open(path, "rb") as f:  # the loop serves nobody while this reads
        return len(f.read())


async def load_report_right(path: Path) -> int:
    return await asyncio.to_thread(read_report, path)


# -- 2. small reads without a buffer -----------------------------------------------------------


def checksum_wrong(path: Path) -> int:
    total = 0
    with open(path, "rb", buffering=0) as f:  # every 512-byte read is a system call
        while chunk := f.read(512):
            total = (total + sum(chunk)) % 65521
    return total


def checksum_right(path: Path) -> int:
    total = 0
    with open(path, "rb") as f:  # the same reads, served from Python's buffer
        while chunk := f.read(512):
            total = (total + sum(chunk)) % 65521
    return total


# -- 3. the same file read whole on every request ---------------------------------------------


def handle_request_wrong(settings: Path) -> str:
    with open(settings, encoding="utf-8") as f:
        return str(json.load(f)["greeting"])


@functools.cache
def cached_settings(settings: Path) -> dict[str, str]:
    with open(settings, encoding="utf-8") as f:
        return dict(json.load(f))


def handle_request_right(settings: Path) -> str:
    return cached_settings(settings)["greeting"]


# -- 4. a file never closed --------------------------------------------------------------------


def count_lines_wrong(path: Path) -> int:
    f = open(path, encoding="utf-8")  # noqa: SIM115 - the misuse on show
    return sum(1 for _ in f)


def count_lines_right(path: Path) -> int:
    with open(path, encoding="utf-8") as f:
        return sum(1 for _ in f)


# -----------------------------------------------------------------------------------------------


def make_files(folder: Path, big_mb: int) -> dict[str, Path]:
    files = {
        "big": folder / "report.bin",
        "big_right": folder / "report-copy.bin",
        "data": folder / "data.bin",
        "data_right": folder / "data-copy.bin",
        "settings": folder / "settings.json",
        "settings_right": folder / "settings-copy.json",
        "log": folder / "app.log",
        "log_right": folder / "app-copy.log",
    }
    block = os.urandom(1 << 20)
    for name in ("big", "big_right"):
        with open(files[name], "wb") as f:
            for _ in range(big_mb):
                f.write(block)
    for name in ("data", "data_right"):
        files[name].write_bytes(block[: 64 * 1024])
    for name in ("settings", "settings_right"):
        files[name].write_text(json.dumps({"greeting": "hello"}), encoding="utf-8")
    for name in ("log", "log_right"):
        files[name].write_text("".join(f"line {i}\n" for i in range(1000)), encoding="utf-8")
    return files


async def serve(files: dict[str, Path]) -> None:
    await load_report_wrong(files["big"])
    await load_report_right(files["big_right"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--big-mb", type=int, default=48)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="io-demo-") as tmp:
        files = make_files(Path(tmp), args.big_mb)
        asyncio.run(serve(files))
        assert checksum_wrong(files["data"]) == checksum_right(files["data_right"])
        for _ in range(REQUESTS):
            handle_request_wrong(files["settings"])
            handle_request_right(files["settings_right"])
        assert count_lines_wrong(files["log"]) == count_lines_right(files["log_right"])
    print("done: four misuses, four right ways")


if __name__ == "__main__":
    main()
