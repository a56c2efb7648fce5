"""``hawkwatch debug dump FILE``: what is actually inside a store file, record by record."""

from __future__ import annotations

import argparse
from pathlib import Path

from hawkwatch.errors import HawkwatchError
from hawkwatch.store.appender_read import MAX_LOG_BYTES
from hawkwatch.store.files import read_regular
from hawkwatch.store.inspect import describe_buffer


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="debug_command", metavar="TOOL", required=True)
    dump = sub.add_parser("dump", help="dump a .mmap2 buffer or .mtlog file line by line")
    dump.add_argument("file", metavar="FILE")


def run(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.exists():
        raise HawkwatchError(f"{path}: no such file")
    data = read_regular(path, MAX_LOG_BYTES, too_big="too large to dump")  # StoreError
    if path.suffix == ".mmap2":
        log_path = path.with_suffix(".mtlog")
        layout = describe_buffer(data, log_path.stat().st_size if log_path.exists() else 0)
        print(f"{path}: {layout.size:,} bytes")
        if not layout.has_unflushed_data:
            print("  first byte is 00: no unflushed data")
            return 0
        for line in layout.lines:
            flag = "" if line.is_complete else "   <- incomplete (torn) line"
            print(f"  @{line.offset:>7}  {line.text.decode(errors='replace')}{flag}")
        print(
            f"  valid data: {layout.valid_bytes:,} bytes; end marker: "
            f"{'at ' + str(layout.marker_offset) if layout.marker_offset is not None else 'none'}"
            f"; stale non-zero bytes after it: {layout.stale_bytes:,}"
        )
        if layout.journal_offset_in_log is not None:
            print(
                f"  a flush of this data to .mtlog offset {layout.journal_offset_in_log:,} "
                "was interrupted; reopening keeps it exactly once"
            )
        return 0
    offset = 0
    for number, text in enumerate(data.split(b"\n"), start=1):
        if offset >= len(data):
            break
        print(f"  {number:>6} @{offset:>9}  {text.decode(errors='replace')}")
        offset += len(text) + 1
    print(f"{path}: {len(data):,} bytes")
    return 0
