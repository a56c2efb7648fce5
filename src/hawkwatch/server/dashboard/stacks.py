"""An issue's stacks as the issue page shows them: threads of frames with their source lines.

Two shapes come in: an iOS crash (the ``hawkwatch-crash`` JSON the pipeline stored, frames
symbolicated against the symbol store) and a session's own crash records (Python frames, their
source lines read when the session was processed). Source lines of native frames are read only
from folders the operator named (``--sources``): a crash report must not make the server read
arbitrary files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Frame:
    function: str
    location: str | None
    source: str | None = None
    inlined: bool = False
    image: str | None = None


@dataclass(frozen=True)
class Thread:
    name: str
    crashed: bool
    frames: list[Frame]


@dataclass(frozen=True)
class StackView:
    headline: str | None = None
    threads: list[Thread] = field(default_factory=list)
    breadcrumbs: list[dict[str, Any]] = field(default_factory=list)


def source_line(file: str | None, line: int | None, roots: tuple[Path, ...]) -> str | None:
    """Line ``line`` of ``file`` when the file lies under one of ``roots``, else None."""
    if not file or not line or line < 1:
        return None
    wanted = Path(file)
    for root in roots:
        base = root.resolve()
        candidates = [wanted] if wanted.is_absolute() else [base / wanted]
        candidates.append(base / wanted.name)
        for candidate in candidates:
            try:
                resolved = candidate.resolve()
                if not resolved.is_relative_to(base) or not resolved.is_file():
                    continue
                with resolved.open(encoding="utf-8", errors="replace") as text:
                    for number, content in enumerate(text, 1):
                        if number == line:
                            return content.strip()
            except OSError:
                continue
    return None


def _native_frame(frame: dict[str, Any], roots: tuple[Path, ...]) -> Frame:
    symbol = frame.get("symbol") or frame.get("address") or "?"
    file, line = frame.get("file"), frame.get("line")
    location = f"{file}:{line}" if file else None
    return Frame(
        function=str(symbol), location=location, source=source_line(file, line, roots),
        inlined=bool(frame.get("inlined")), image=frame.get("image"),
    )  # fmt: skip


def ios_crash(event: dict[str, Any], roots: tuple[Path, ...]) -> StackView:
    exception = event.get("exception") or {}
    headline = " ".join(
        str(part) for part in (exception.get("type"), exception.get("signal"),
                               exception.get("subtype") or exception.get("reason")) if part
    )  # fmt: skip
    threads = []
    backtrace = event.get("last_exception_backtrace") or []
    if backtrace:
        threads.append(Thread("last exception backtrace", True,
                              [_native_frame(f, roots) for f in backtrace]))  # fmt: skip
    for thread in event.get("threads") or []:
        name = thread.get("name") or thread.get("queue") or ""
        title = f"thread {thread.get('index')}" + (f" ({name})" if name else "")
        frames = [_native_frame(f, roots) for f in thread.get("frames") or []]
        threads.append(Thread(title, bool(thread.get("crashed")), frames))
    threads.sort(key=lambda t: not t.crashed)
    return StackView(headline or None, threads, [])


def _python_frames(frames: list[dict[str, Any]]) -> list[Frame]:
    return [
        Frame(str(f.get("function") or "?"), f"{f.get('file')}:{f.get('line')}", f.get("source"))
        for f in frames
    ]


def session_crash(report: dict[str, Any] | None) -> StackView | None:
    """The fatal crash a session recorded (or its last one), as a stack view."""
    crashes = (report or {}).get("crashes") or []
    if not crashes:
        return None
    crash = next((c for c in crashes if c.get("fatal")), crashes[-1])
    threads = [Thread(str(crash.get("thread") or "thread"), True,
                      _python_frames(crash.get("frames") or []))]  # fmt: skip
    threads.extend(
        Thread(str(other.get("name")), False, _python_frames(other.get("frames") or []))
        for other in crash.get("threads") or []
        if other.get("name") != crash.get("thread")
    )
    headline = crash.get("title") or f"{crash.get('type')}: {crash.get('message')}"
    return StackView(str(headline), threads, list(crash.get("breadcrumbs") or []))


def stack_view(kind: str, event: dict[str, Any], report: dict[str, Any] | None,
               roots: tuple[Path, ...]) -> StackView | None:  # fmt: skip
    """The stacks to show for an issue of ``kind`` with this event (and its session's report)."""
    if kind == "crash" and event.get("format") == "hawkwatch-crash":
        return ios_crash(event, roots)
    if kind in ("fatal-signal", "exception", "crash"):
        return session_crash(report)
    return None


def session_breadcrumbs(report: dict[str, Any] | None, before: float) -> list[dict[str, Any]]:
    """The last 20 events the session recorded up to ``before``: what led to a problem that
    carries no breadcrumbs of its own (a stall, a slow request)."""
    events = [e for e in (report or {}).get("events") or [] if (e.get("time") or 0) <= before]
    return [
        {"time": e.get("time"), "kind": "event",
         "text": " ".join(str(p) for p in (e.get("name"), e.get("extra")) if p)}
        for e in events[-20:]
    ]  # fmt: skip


def problem_time(kind: str, culprit: str | None, report: dict[str, Any] | None,
                 recorded: float) -> float:  # fmt: skip
    """When the problem happened in its session: a stall's end (its occurrence carries the
    session's start; what the blocked step recorded counts), else the occurrence's time."""
    stalls = ((report or {}).get("stalls") or {}).get("longest") or []
    if kind == "stall":
        times = [row["time"] + (row.get("duration_ms") or 0) / 1000 for row in stalls
                 if row.get("frame") == culprit and row.get("time")]  # fmt: skip
        if times:
            return float(max(times))
    return recorded
