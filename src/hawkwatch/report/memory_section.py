"""The console report's memory section (rich): the lines of ``hawkwatch memory``, shortened to
the top three leak suspects and types. Kept apart from ``console.py`` like the CPU section."""

from __future__ import annotations

from dataclasses import replace

from rich.console import Group
from rich.text import Text

from hawkwatch.model.memory_report import MemoryReport
from hawkwatch.report.memory import memory_lines

TOP = 3


def memory_section(report: MemoryReport) -> Group:
    short = replace(
        report,
        leaks=report.leaks[:TOP],
        growing_types=report.growing_types[:TOP],
        top_stacks=(),
    )
    lines = list(memory_lines(short))
    note = "more: hawkwatch memory (flame graph of live bytes: --format speedscope)"
    return Group(Text("Memory", style="bold"), Text("\n".join(lines)), Text(note, style="dim"))
