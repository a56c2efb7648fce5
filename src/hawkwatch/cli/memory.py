"""``hawkwatch memory``: growth, leak suspects with their allocation stacks, growing types with
referrer paths, and the top live stacks of a Python session (flame graphs weigh bytes)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TextIO

from hawkwatch.analysis.memory_report import build_memory_report, top_stacks_live
from hawkwatch.cli._sessions import add_session_arguments, find_session
from hawkwatch.errors import HawkwatchError
from hawkwatch.model.allocations import call_tree
from hawkwatch.model.memory_report import MemoryReport
from hawkwatch.report.memory import render_console, render_json

FORMATS = ("console", "json", "collapsed", "speedscope")


class OutputError(HawkwatchError):
    """The output file cannot be written."""


def configure(parser: argparse.ArgumentParser) -> None:
    add_session_arguments(parser)
    parser.add_argument("--format", choices=FORMATS, default="console", help="default: console")
    parser.add_argument("--json", action="store_true", help="same as --format json")
    parser.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")


def run(args: argparse.Namespace) -> int:
    session = find_session(args.session, args.root)
    report = build_memory_report(session.records().records)
    output_format = "json" if args.json else args.format
    if args.output:
        try:
            with Path(args.output).open("w", encoding="utf-8") as file:
                _render(report, output_format, file)
        except OSError as exc:
            raise OutputError(f"{args.output}: cannot write: {exc.strerror}") from exc
    else:
        _render(report, output_format, sys.stdout)
        sys.stdout.flush()
    if output_format in ("collapsed", "speedscope") and not report.top_stacks:
        print(
            "hawkwatch: no allocation snapshot in this session (tracing starts on growth, or "
            "with 'hawkwatch run --memory')",
            file=sys.stderr,
        )
    return 0


def _render(report: MemoryReport, output_format: str, file: TextIO) -> None:
    if output_format == "console":
        render_console(report, file)
        return
    if output_format == "json":
        render_json(report, file)
        return
    tree = call_tree(top_stacks_live(report), weight="bytes", name="live bytes")
    if output_format == "speedscope":
        from hawkwatch.formats.speedscope import to_json_dict

        document = to_json_dict(tree)
        document["profiles"][0]["unit"] = "bytes"
        json.dump(document, file, separators=(",", ":"))
        file.write("\n")
        return
    from hawkwatch.formats.profile_exports import get_exporter

    get_exporter(output_format).render(tree, file)
