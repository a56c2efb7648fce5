"""``hawkwatch memory``: growth, leak suspects with their allocation stacks, growing types with
referrer paths, and the top live stacks of a Python session (flame graphs weigh bytes)."""

from __future__ import annotations

import argparse

from hawkwatch.api.memory import memory_report
from hawkwatch.api.session import load_session
from hawkwatch.cli._common import add_output_arguments, add_session_arguments, emit, status


def configure(parser: argparse.ArgumentParser) -> None:
    add_session_arguments(parser)
    add_output_arguments(parser, "MemoryReport")


def run(args: argparse.Namespace) -> int:
    report = memory_report(load_session(args.session, args.root))
    emit(report, args)
    if args.format in ("collapsed", "speedscope") and not report.top_stacks:
        status(
            "no allocation snapshot in this session (tracing starts on growth, or with "
            "'hawkwatch run --memory')"
        )
    return 0
