"""Allocation tracing with tracemalloc, into the shared live-allocation model.

Snapshots are grouped by full traceback into one ``UniquingTable`` (so consecutive snapshots
compare stack by stack, ``model.allocations.growth``); hawkwatch's own allocations are filtered
out. tracemalloc frames carry no function name: it is found (``frames``) from the source file's
syntax tree (``linecache`` + ``ast``, once per file), only for stacks that are written.

tracemalloc costs the app on every allocation (see docs/agent.md): it is started only by the
memory monitor's decision, and stopped again only if hawkwatch started it (an app tracing on its
own keeps its tracing).
"""

from __future__ import annotations

import ast
import bisect
import linecache
import tracemalloc
from collections import deque
from pathlib import Path

from hawkwatch.analysis.allocations import build_allocation_report
from hawkwatch.analysis.memory_growth import LEAK_MIN_SHARE, SteadyGrowth, steady_growth
from hawkwatch.model.allocation_report import ReportRules
from hawkwatch.model.allocations import AllocationFrame, Group, LiveAllocations
from hawkwatch.model.stack import PyFrame, UniquingTable

_PACKAGE = str(Path(__file__).resolve().parents[2]) + "/"
_AGENT = _PACKAGE + "agent/"


def _own(traceback: tracemalloc.Traceback) -> bool:
    """Allocated by the agent's threads (the scheduler's loop is at their bottom), or by
    hawkwatch or tracemalloc themselves: not the app's memory."""
    innermost = traceback[-1].filename
    if innermost.startswith(_PACKAGE) or innermost == tracemalloc.__file__:
        return True
    return any(frame.filename.startswith(_AGENT) for frame in traceback)


CATEGORY = "python"


class FunctionNames:
    """``(file, line)`` → qualified name of the innermost function defined around that line."""

    def __init__(self) -> None:
        self._spans: dict[str, tuple[list[int], list[tuple[int, int, str]]]] = {}

    def name(self, file: str, line: int) -> str:
        spans = self._spans.get(file)
        if spans is None:
            spans = self._spans[file] = _function_spans(file)
        starts, items = spans
        best = "<module>"
        for index in range(bisect.bisect_right(starts, line) - 1, -1, -1):
            start, end, name = items[index]
            if start <= line <= end:
                best = name
                break
        return best


def _function_spans(file: str) -> tuple[list[int], list[tuple[int, int, str]]]:
    """Every def's line span and qualified name, sorted so the innermost match is found last."""
    source = "".join(linecache.getlines(file))
    try:
        tree = ast.parse(source) if source else None
    except (SyntaxError, ValueError):
        tree = None
    items: list[tuple[int, int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    items.append((start, child.end_lineno or child.lineno, name))
                    visit(child, name + ".<locals>.")
                else:
                    visit(child, name + ".")
            else:
                visit(child, prefix)

    if tree is not None:
        visit(tree, "")
    items.sort(key=lambda item: (item[0], -item[1]))
    return [item[0] for item in items], items


class AllocationTracer:
    """tracemalloc snapshots kept as ``LiveAllocations`` over one table; leak suspects."""

    def __init__(self, nframes: int, keep: int = 12) -> None:
        self.nframes = nframes
        self.owned = False
        self.table: UniquingTable[AllocationFrame] = UniquingTable()
        self.snapshots: deque[LiveAllocations] = deque(maxlen=keep)
        self.taken = 0
        self.peak_overhead = 0
        self.names = FunctionNames()

    def start(self) -> None:
        """Trace from now on; an app's own tracing is reused and left running at ``stop``."""
        if tracemalloc.is_tracing():
            self.owned = False
        else:
            tracemalloc.start(self.nframes)
            self.owned = True

    def stop(self) -> None:
        if self.owned and tracemalloc.is_tracing():
            tracemalloc.stop()
        self.owned = False
        self.snapshots.clear()

    def snapshot(self, time_s: float) -> LiveAllocations:
        """What is live now, grouped by stack (innermost first)."""
        snap = tracemalloc.take_snapshot()
        groups = []
        for stat in snap.statistics("traceback"):
            if _own(stat.traceback):
                continue
            parent = -1
            for frame in stat.traceback:  # oldest first: outermost frame is the parent
                parent = self.table.push(PyFrame("", frame.filename, frame.lineno), parent)
            groups.append(Group(parent, CATEGORY, stat.size, stat.count))
        del snap
        self.peak_overhead = max(self.peak_overhead, tracemalloc.get_tracemalloc_memory())
        self.taken += 1
        live = LiveAllocations(
            "tracemalloc", self.table, tuple(groups), position=self.taken, time_s=time_s
        )
        self.snapshots.append(live)
        return live

    def frames(self, stack_id: int) -> tuple[PyFrame, ...]:
        """A stack's frames, innermost first, with function names (found only now)."""
        return tuple(
            frame._replace(func=frame.func or self.names.name(frame.file, frame.line))
            for frame in self.table.stack(stack_id)
            if isinstance(frame, PyFrame)
        )

    def suspects(
        self, min_snapshots: int, min_bytes: int = 1024, min_fraction: float = 0.75
    ) -> list[SteadyGrowth[int]]:
        """Stacks whose live bytes rose in most consecutive snapshots (not churn)."""
        if len(self.snapshots) < min_snapshots:
            return []
        series = [{g.stack_id: g.bytes for g in live.groups} for live in self.snapshots]
        return steady_growth(
            series, min_growth=min_bytes, min_fraction=min_fraction, min_share=LEAK_MIN_SHARE
        )

    def top_stacks(self, live: LiveAllocations) -> list[Group]:
        """The stacks Matrix's emit rules list (≥ 128 KiB or top 10)."""
        report = build_allocation_report(live, ReportRules())
        if not report.categories:
            return []
        return [
            Group(stack.stack_id, CATEGORY, stack.bytes, stack.count)
            for stack in report.categories[0].stacks
        ]
