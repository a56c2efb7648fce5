"""``hawkwatch symbols add PATH...`` / ``hawkwatch symbols list``: the debug-file store."""

from __future__ import annotations

import argparse
import json
import sys

from hawkwatch.errors import HawkwatchError
from hawkwatch.symbols import DebugFile, SymbolStore


def configure(parser: argparse.ArgumentParser) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--root", metavar="DIR", help="symbol store folder (default: $HAWKWATCH_HOME/symbols)"
    )
    sub = parser.add_subparsers(dest="symbols_command", metavar="ACTION", required=True)
    add = sub.add_parser(
        "add",
        parents=[common],
        help="index dSYM bundles, Mach-O / ELF files, folders or zip archives of them",
    )
    add.add_argument("paths", nargs="+", metavar="PATH")
    listing = sub.add_parser(
        "list", parents=[common], help="the stored debug files, one per debug id"
    )
    listing.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    store = SymbolStore(args.root)
    if args.symbols_command == "add":
        result = store.add(args.paths)
        for info in result.added:
            print(_line(info))
        for source, reason in result.skipped:
            print(f"skipped {source}: {reason}", file=sys.stderr)
        print(
            f"{len(result.added)} debug file(s) added to {store.root}, "
            f"{len(result.skipped)} skipped",
            file=sys.stderr,
        )
        if not result.added and result.skipped:
            raise HawkwatchError("no debug file with a UUID or build id found in the given paths")
        return 0
    entries = store.entries()
    if args.format == "json":
        json.dump(
            [
                {
                    "debug_id": info.debug_id,
                    "code_id": info.code_id,
                    "arch": info.arch,
                    "name": info.name,
                    "has_debug_info": info.has_debug_info,
                    "text_vmaddr": f"0x{info.text_vmaddr:x}",
                    "source": info.source,
                }
                for info in entries
            ],
            sys.stdout,
            indent=1,
        )
        print()
        return 0
    for info in entries:
        print(_line(info))
    print(f"{len(entries)} debug file(s) in {store.root}", file=sys.stderr)
    return 0


def _line(info: DebugFile) -> str:
    kind = "dwarf " if info.has_debug_info else "symtab"
    return f"{info.debug_id}  {info.arch:<7} {kind}  {info.name}  ({info.source})"
