"""``hawkwatch debug dump FILE``: what is actually inside a store file, record by record."""

from __future__ import annotations

import argparse

from hawkwatch.api.debug import dump_file
from hawkwatch.cli._common import add_output_arguments, emit


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="debug_command", metavar="TOOL", required=True)
    dump = sub.add_parser(
        "dump",
        help="dump a .mmap2 buffer, .mtlog file or MallocStackLogging .index record by record",
    )
    dump.add_argument("file", metavar="FILE")
    add_output_arguments(dump, "FileDump")


def run(args: argparse.Namespace) -> int:
    emit(dump_file(args.file), args)
    return 0
