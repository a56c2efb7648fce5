"""The session view's tables: launch, stalls, crashes, I/O, memory, exit, timings (HTML text).

Each function takes its part of the report JSON and returns a ``<section>``; an absent part
gives a section saying so, so every page has the same layout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hawkwatch.web._html import count, esc, ms, num, offset, size, table, tag

_MAX_ROWS = 50
#: Stalls listed with their stacks (all of them are on the timeline, up to its own cap).
_MAX_STALLS = 20


def section(title: str, body: str, name: str) -> str:
    return tag("section", tag("h3", esc(title)) + body, class_=f"hw-part hw-{name}",
               data_hw_part=name)  # fmt: skip


def empty(text: str) -> str:
    return tag("p", esc(text), class_="hw-empty")


def launch(data: Mapping[str, Any] | None) -> str:
    if not data:
        return section("Launch", empty("No launch milestones recorded."), "launch")
    rows = [
        [esc(p.get("label")), ms(p.get("offset_ms")), ms(p.get("delta_ms"))]
        for p in data.get("phases") or []
    ]
    total = data.get("duration_ms")
    end = data.get("end_label", "ready")
    said = (
        f"Process start → {end}: {ms(total)}."
        if total is not None
        else f"Process start → {end}: not captured."
    )
    missing = data.get("not_captured") or []
    if missing:
        said += " Not captured: " + ", ".join(str(m) for m in missing) + "."
    body = tag("p", esc(said), class_="hw-note")
    body += tag("div", "", class_="hw-canvas hw-launch-bars", data_hw_view="launch")
    body += table(["phase", "at", "took"], rows, class_="hw-table")
    return section("Launch", body, "launch")


def cpu(data: Mapping[str, Any] | None) -> str:
    """The costliest frames of the profile and the high-load episodes (under the flame graph)."""
    if not data:
        return section("CPU", empty("No CPU profile or high-load episode."), "cpu")
    body = ""
    if data.get("outside_note"):  # py-spy could not sample: say so above the numbers
        body += tag("p", esc(str(data["outside_note"])), class_="hw-note")
    profiler = data.get("profiler") or {}
    if profiler:
        said = (f"{count(profiler.get('windows', 0), 'profiler window')}, "
                f"{count(profiler.get('samples', 0), 'sample')} at "
                f"{num(profiler.get('rate_hz'))} Hz over {num(profiler.get('duration_s'))} s; "
                "the sampler's own cost "
                f"{num(profiler.get('cost_percent'), 2)} % of a core.")  # fmt: skip
        body += tag("p", esc(said), class_="hw-note")
        body += _cpu_frames(profiler.get("top_frames") or [])
    episodes = data.get("episodes") or []
    if episodes:
        rows = [[offset(e.get("offset_s")), ms((e.get("lasting_s") or 0) * 1000),
                 f"{num(e.get('average_percent'))} %", f"{e.get('samples', 0):,}",
                 "<br>".join(f"<code>{esc(f.get('frame'))}</code> {num(f.get('self_percent'))} %"
                             for f in e.get("top_frames") or []),
                 esc(", ".join(e.get("threads") or []))]
                for e in episodes]  # fmt: skip
        total = data.get("episodes_total", len(episodes))
        body += tag("h4", esc(f"High-load episodes ({total:,})")) + table(
            ["at", "lasting", "CPU", "samples", "costliest frames", "threads"], rows,
            class_="hw-table")  # fmt: skip
    return section("CPU", body or empty("No CPU profile or high-load episode."), "cpu")


def _cpu_frames(frames: Sequence[Mapping[str, Any]]) -> str:
    if not frames:
        return ""
    rows = [[f"<code>{esc(f.get('frame'))}</code>", f"{num(f.get('self_percent'))} %",
             f"{num(f.get('self_low_percent'))}–{num(f.get('self_high_percent'))} %",
             f"{num(f.get('total_percent'))} %"] for f in frames]  # fmt: skip
    return tag("h4", "Costliest frames") + table(
        ["frame", "self", "self, 95 % interval", "total"], rows, class_="hw-table")


def stalls(data: Mapping[str, Any] | None, marks: Sequence[Mapping[str, Any]] | None) -> str:
    if not data:
        return section("Stalls", empty("No stalls: the watched loops never blocked."), "stalls")
    said = (
        f"{count(data.get('count', 0), 'stall')}, {ms(data.get('total_ms'))} in all; "
        f"p50 {ms(data.get('p50_ms'))}, p95 {ms(data.get('p95_ms'))}, "
        f"longest {ms(data.get('max_ms'))}."
    )
    groups = [
        [
            f"<code>{esc(g.get('frame'))}</code>"
            + (f"<pre class='hw-source'>{esc(g.get('source_line'))}</pre>"
               if g.get("source_line") else ""),
            esc(g.get("loop") or "–"),
            f"{g.get('count', 0):,}",
            ms(g.get("total_ms")),
            ms(g.get("max_ms")),
        ]
        for g in data.get("groups") or []
    ]  # fmt: skip
    body = tag("p", esc(said), class_="hw-note")
    body += table(["blocking frame", "loop", "stalls", "total", "longest"], groups,
                  class_="hw-table")  # fmt: skip
    items = sorted(marks or [], key=lambda m: -(m.get("duration_ms") or 0))[:_MAX_STALLS]
    if items:
        body += tag("h4", esc(f"The {len(items)} longest, with their blocking stacks"
                              if len(items) > 1 else "With its blocking stack"))  # fmt: skip
        body += "".join(_stall(mark) for mark in items)
    return section("Stalls", body, "stalls")


def _stall(mark: Mapping[str, Any]) -> str:
    stack = mark.get("stack") or []
    blocking = mark.get("blocking", 0)
    frames = "".join(
        tag("li", f"<code>{esc(frame)}</code>", class_="hw-blocking" if i == blocking else None)
        for i, frame in enumerate(stack)
    )
    where = f" on {mark['thread']}" if mark.get("thread") else ""
    summary = (
        f"{ms(mark.get('duration_ms'))} at {offset(mark.get('offset_s'))}{where}: "
        f"{mark.get('frame') or '(no stack)'}"
    )
    stack_html = tag("ol", frames, class_="hw-stack") if frames else empty("No stack recorded.")
    return tag("details", tag("summary", esc(summary)) + stack_html, class_="hw-stall",
               data_duration_ms=mark.get("duration_ms"),
               data_offset_s=mark.get("offset_s"))  # fmt: skip


def crashes(data: Sequence[Mapping[str, Any]]) -> str:
    if not data:
        return section("Crashes", empty("No crashes."), "crashes")
    return section("Crashes", "".join(_crash(crash) for crash in data), "crashes")


def _crash(crash: Mapping[str, Any]) -> str:
    title = crash.get("title") or f"{crash.get('type')}: {crash.get('message')}"
    head = tag("h4", esc(title))
    head += tag("pre", esc(f"{crash.get('type')}: {crash.get('message')}"), class_="hw-message")
    head += tag("p", esc(
        f"{crash.get('kind')} on {crash.get('thread')} at {offset(crash.get('offset_s'))}"
        f"{' (fatal)' if crash.get('fatal') else ''}; fingerprint {crash.get('fingerprint')}"
    ), class_="hw-note")  # fmt: skip
    body = head + _frames(crash.get("frames") or [])
    for cause in crash.get("causes") or []:
        body += tag("h5", esc(f"{cause.get('relation')}: {cause.get('type')}: "
                              f"{cause.get('message')}"))  # fmt: skip
        body += _frames(cause.get("frames") or [])
    threads = crash.get("threads") or []
    if threads:
        body += tag("details", tag("summary", esc(f"all threads ({len(threads)})")) + "".join(
            tag("h5", esc(t.get("name"))) + _frames(t.get("frames") or []) for t in threads
        ))  # fmt: skip
    crumbs = crash.get("breadcrumbs") or []
    if crumbs:
        rows = [[esc(b.get("kind")), esc(b.get("text"))] for b in crumbs[-_MAX_ROWS:]]
        body += tag("details", tag("summary", esc(f"breadcrumbs ({len(crumbs)})"))
                    + table(["kind", "what"], rows, class_="hw-table"))  # fmt: skip
    return tag("article", body, class_="hw-crash")


def _frames(frames: Sequence[Mapping[str, Any]]) -> str:
    items = "".join(
        tag(
            "li",
            f"<code>{esc(f.get('function'))} ({esc(f.get('file'))}:{esc(f.get('line'))})</code>"
            + (f"<pre class='hw-source'>{esc(f.get('source'))}</pre>" if f.get("source") else ""),
        )
        for f in frames
    )
    return tag("ol", items, class_="hw-stack") if items else empty("No frames.")


def io_issues(data: Sequence[Mapping[str, Any]]) -> str:
    if not data:
        return section("File I/O", empty("No file I/O issues."), "io")
    rows = [
        [
            esc(i.get("type")),
            f"<code>{esc(i.get('path'))}</code>",
            esc(i.get("thread")),
            f"{i.get('ops', 0):,}",
            size(i.get("bytes")),
            ms(i.get("cost_ms")),
            _times(i),
            _call_site(i.get("frames") or []),
        ]
        for i in data[:_MAX_ROWS]
    ]
    headers = ["issue", "file", "thread", "ops", "bytes", "cost", "times", "opened at"]
    return section("File I/O", table(headers, rows, class_="hw-table"), "io")


def _times(issue: Mapping[str, Any]) -> str:
    """The count, and whether the site was sampled before the issue was found (the count then
    covers the watched files only)."""
    times = f"{issue.get('count', 1):,}"
    unwatched = issue.get("unwatched") or 0
    if not unwatched:
        return times
    return (
        f"{times} <small class=\"hw-sampled\">(site sampled: 1 in "
        f"{esc(issue.get('sampled_one_in'))} watched, {unwatched:,} files unwatched before "
        "it was found)</small>"
    )


def _call_site(frames: Sequence[Mapping[str, Any]]) -> str:
    if not frames:
        return "–"
    f = frames[0]
    return f"<code>{esc(f.get('function'))} ({esc(f.get('file'))}:{esc(f.get('line'))})</code>"


def memory(data: Mapping[str, Any] | None) -> str:
    if not data:
        return section("Memory", empty("No memory findings."), "memory")
    body = ""
    growth = data.get("growth") or []
    if growth:
        rows = [
            [ms(g.get("window_s", 0) * 1000), size(g.get("start_bytes")), size(g.get("end_bytes")),
             size(g.get("growth_bytes")), f"{num(g.get('growth_percent'))} %",
             f"{size(g.get('slope_bytes_per_s'))}/s"]
            for g in growth[:_MAX_ROWS]
        ]  # fmt: skip
        body += tag("h4", "Growth") + table(
            ["window", "from", "to", "growth", "", "rate"], rows, class_="hw-table")
    leaks = data.get("leaks") or []
    if leaks:
        rows = [
            [_mem_frames(leak.get("frames") or []), size(leak.get("growth_bytes")),
             size(leak.get("live_bytes")), f"{leak.get('count', 0):,}",
             f"{leak.get('grown', 0)}/{leak.get('steps', 0)}"]
            for leak in leaks[:_MAX_ROWS]
        ]  # fmt: skip
        body += tag("h4", "Leak suspects") + table(
            ["allocated at", "growth", "live", "blocks", "steps grown"], rows, class_="hw-table")
    types = data.get("growing_types") or []
    if types:
        rows = [
            [f"<code>{esc(t.get('type'))}</code>", f"{t.get('count', 0):,}",
             f"{t.get('count_growth', 0):+,}",
             esc(" → ".join(t.get("referrer_path") or []) or t.get("path_note") or "–")]
            for t in types[:_MAX_ROWS]
        ]  # fmt: skip
        body += tag("h4", "Growing types") + table(
            ["type", "instances", "growth", "held by"], rows, class_="hw-table")
    stacks = data.get("top_stacks") or []
    if stacks:
        rows = [[_mem_frames(s.get("frames") or []), size(s.get("bytes")), f"{s.get('count', 0):,}"]
                for s in stacks[:10]]  # fmt: skip
        body += tag("h4", "Largest live allocations (tracemalloc)") + table(
            ["allocated at", "bytes", "blocks"], rows, class_="hw-table")
    rss = data.get("rss") or {}
    if rss.get("peak_bytes") is not None:
        said = (f"Resident memory: {size(rss.get('first_bytes'))} first, "
                f"{size(rss.get('last_bytes'))} last, {size(rss.get('peak_bytes'))} peak.")
        body = tag("p", esc(said), class_="hw-note") + body
    return section("Memory", body or empty("No memory findings."), "memory")


def _mem_frames(frames: Sequence[Any]) -> str:
    shown = []
    for frame in frames[:3]:
        if isinstance(frame, Mapping):
            shown.append(f"{frame.get('func', frame.get('function'))} "
                         f"({frame.get('file')}:{frame.get('line')})")  # fmt: skip
        elif isinstance(frame, list | tuple) and len(frame) >= 3:
            shown.append(f"{frame[0]} ({frame[1]}:{frame[2]})")
        else:
            shown.append(str(frame))
    return "<br>".join(f"<code>{esc(text)}</code>" for text in shown) or "–"


def exit_state(data: Mapping[str, Any] | None) -> str:
    if not data:
        return section("Exit", empty("How the process ended was not recorded."), "exit")
    facts = [
        ("kind", data.get("kind") or "–"),
        ("clean", "yes" if data.get("clean") else "no"),
        ("exit code", data.get("exit_code")),
        ("signal", data.get("signal")),
        ("at", offset(data.get("offset_s"))),
        ("recorded by", data.get("source")),
    ]
    items = "".join(
        f"<div><dt>{esc(k)}</dt><dd>{esc(v)}</dd></div>" for k, v in facts if v is not None
    )
    evidence = "".join(tag("li", esc(e)) for e in data.get("evidence") or [])
    body = tag("dl", items, class_="hw-facts", data_hw_exit_kind=data.get("kind") or "")
    if evidence:
        body += tag("ul", evidence, class_="hw-evidence")
    return section("Exit", body, "exit")


def timings(report: Mapping[str, Any]) -> str:
    """Spans, GC pauses, events and monitor errors: the smaller tables."""
    body = ""
    spans = report.get("spans") or {}
    if spans.get("groups"):
        rows = [[esc(g.get("name")), f"{g.get('count', 0):,}", f"{g.get('error_count', 0):,}",
                 ms(g.get("total_ms")), ms(g.get("p95_ms")), ms(g.get("max_ms"))]
                for g in spans["groups"]]  # fmt: skip
        body += tag("h4", "Spans") + table(
            ["span", "count", "errors", "total", "p95", "max"], rows, class_="hw-table")
    gc = report.get("gc") or {}
    if gc.get("by_generation"):
        rows = [[esc(g.get("generation")), f"{g.get('count', 0):,}", ms(g.get("total_ms")),
                 ms(g.get("max_ms"))] for g in gc["by_generation"]]  # fmt: skip
        body += tag("h4", "GC pauses") + table(
            ["generation", "pauses", "total", "longest"], rows, class_="hw-table")
    events = report.get("events") or []
    if events:
        rows = [[offset(e.get("offset_s")), esc(e.get("name")), esc(e.get("extra") or "")]
                for e in events]  # fmt: skip
        body += tag("h4", "Events") + table(["at", "event", "detail"], rows, class_="hw-table")
    imports = report.get("imports") or {}
    if imports.get("top"):
        rows = [[f"<code>{esc(i.get('module'))}</code>", ms(i.get("cumulative_ms")),
                 ms(i.get("self_ms")), esc(i.get("parent") or "")]
                for i in imports["top"]]  # fmt: skip
        body += tag("h4", esc(f"Slowest imports (of {imports.get('count', 0):,})")) + table(
            ["module", "cumulative", "self", "imported by"], rows, class_="hw-table")
    errors = report.get("errors") or []
    if errors:
        rows = [[offset(e.get("offset_s")), esc(e.get("plugin")), esc(e.get("error"))]
                for e in errors]  # fmt: skip
        body += tag("h4", "Monitor errors") + table(
            ["at", "monitor", "error"], rows, class_="hw-table")
    return section("Spans, GC, imports and events", body or empty("None recorded."), "timings")
