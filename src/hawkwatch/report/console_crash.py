"""The crash section of the console report, and the exit line with its evidence."""

from __future__ import annotations

from collections.abc import Iterator

from rich.console import Group
from rich.text import Text

from hawkwatch.model.report import CrashFrameRow, CrashRow, ExitState
from hawkwatch.report.paths import short_frame

MAX_FRAMES = 12


def _frame_lines(frames: tuple[CrashFrameRow, ...], indent: str = "    ") -> Text:
    text = Text()
    for frame in frames[:MAX_FRAMES]:
        label = short_frame(f"{frame.function} ({frame.file}:{frame.line})")
        text.append(f"{indent}{label}\n")
        if frame.source:
            text.append(f"{indent}    {frame.source}\n", style="dim")
    if len(frames) > MAX_FRAMES:
        text.append(f"{indent}… {len(frames) - MAX_FRAMES} more frames\n", style="dim")
    text.rstrip()
    return text


def crash_section(crashes: tuple[CrashRow, ...]) -> Iterator[Group]:
    """Each crash: what, where (innermost first, with source lines), causes, breadcrumbs."""
    if not crashes:
        return
    parts: list[Text] = []
    for crash in crashes:
        head = Text()
        head.append("fatal " if crash.fatal else "non-fatal ", style="red" if crash.fatal else "")
        head.append(f"{crash.type}", style="bold")
        if crash.message:
            head.append(f": {crash.message}")
        where = f" (thread {crash.thread}" if crash.thread else " ("
        head.append(f"{where}{', ' if crash.thread else ''}{crash.source}, group ")
        head.append(f"{crash.fingerprint or '-'})")
        parts.append(head)
        parts.append(_frame_lines(crash.frames))
        for cause in crash.causes:
            parts.append(Text(f"  {cause.relation}: {cause.type}: {cause.message}"))
            parts.append(_frame_lines(cause.frames, "      "))
        if crash.breadcrumbs:
            crumbs = Text("  last breadcrumbs:\n", style="dim")
            for crumb in crash.breadcrumbs[-5:]:
                crumbs.append(f"    {crumb.kind}: {crumb.text}\n", style="dim")
            crumbs.rstrip()
            parts.append(crumbs)
        if crash.threads:
            names = ", ".join(thread.name for thread in crash.threads[:8])
            parts.append(Text(f"  other threads: {names}", style="dim"))
    yield Group(Text(f"Crashes ({len(crashes):,})", style="bold"), *parts)


def exit_line(state: ExitState) -> Text:
    """``Exit: <kind> (…)`` and one dim line per piece of evidence."""
    how = state.kind or ("clean" if state.clean else "not clean")
    details = []
    if state.exit_code is not None:
        details.append(f"exit code {state.exit_code}")
    if state.signal is not None:
        details.append(f"signal {state.signal}")
    if state.source:
        details.append(f"decided by {state.source}")
    text = Text(f"Exit: {how}" + (f" ({', '.join(details)})" if details else ""))
    for item in state.evidence:
        text.append(f"\n  - {item}", style="dim")
    return text
