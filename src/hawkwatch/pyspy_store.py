"""Where the supervisor puts py-spy's windows: into the sessions of the processes it sampled.

Runs after the program ended, like the supervisor's ``exit-state``: each process's windows go
into that process's session (the announced one for the program, ``session.json``'s ``pid`` for
its children) as ``cpu-profile`` records with ``"sampler": "py-spy"``, in the agent's shapes
(side file ``cpu-profile/<key>.json`` from 15 KB). A session whose process still runs (a daemon
that outlived the program) is left alone: its agent still writes there. Each ``cpu-highload``
episode then gets its tree again from py-spy's samples of the windows overlapping it, each cut to
the share of it inside the episode:
the tree goes to the ``cpu-highload-stackframe-ext`` side file (readers take it over the agent's)
and the episode's value is written again with ``"sampler": "py-spy"`` (readers keep a key's last
record). Everything else the agent recorded stays as it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec

from hawkwatch.analysis.calltree import build_roots
from hawkwatch.formats.hawkeye_cpu import read_highload
from hawkwatch.model import collections as c
from hawkwatch.model.profile import (
    EXT_RECORD_END,
    EXT_THRESHOLD_BYTES,
    PY_SPY,
    HighLoadEpisode,
    Profile,
    is_thread_frame,
)
from hawkwatch.model.records import CpuHighLoad, CpuProfile, RecordError
from hawkwatch.model.records.cpu import tree_nodes
from hawkwatch.model.stack import PyFrame
from hawkwatch.pyspy import Window, merged, scaled
from hawkwatch.store import RecordStore, Session, list_sessions
from hawkwatch.store.session import _process_alive


def store_windows(
    windows: Sequence[Window], announced: Path | None, root_pid: int, since: float
) -> dict[Path, int]:
    """Write each process's windows into its session; returns windows written per session."""
    by_pid = merged(windows)
    if not by_pid or announced is None:
        return {}
    sessions = [
        s
        for s in list_sessions(announced.parent)
        if isinstance(s.metadata.get("pid"), int) and (s.start_time or 0) >= since - 1.0
    ]
    grouped: dict[Path, tuple[Session, list[Profile]]] = {}
    for pid, profiles in by_pid.items():
        for profile in profiles:
            session = _session_of(pid, profile, root_pid, announced, sessions)
            if session is not None:
                grouped.setdefault(session.path, (session, []))[1].append(profile)
    written: dict[Path, int] = {}
    for path, (session, profiles) in grouped.items():
        if _process_alive(session):
            continue  # a daemon that outlived the program: its agent still writes there
        write_profiles(session, profiles)
        written[path] = len(profiles)
    return written


def _session_of(
    pid: int, profile: Profile, root_pid: int, announced: Path, sessions: Sequence[Session]
) -> Session | None:
    """The session of ``pid`` that was running at the window's middle: a process that exec'd
    a new Python program has one session per program, told apart by when each agent started."""
    middle = profile.start_time + profile.duration_s / 2
    mine = sorted((_agent_started(s), s) for s in sessions if s.metadata.get("pid") == pid)
    before = [s for started, s in mine if started <= middle]
    if before:
        return before[-1]
    if mine:
        return mine[0][1]
    return Session(announced) if pid == root_pid else None


def _agent_started(session: Session) -> float:
    metadata = session.metadata
    profiler = metadata.get("profiler")
    started = profiler.get("started") if isinstance(profiler, dict) else None
    if isinstance(started, int | float):
        return float(started)
    return session.start_time or 0.0


def write_profiles(session: Session, profiles: Sequence[Profile]) -> None:
    """``cpu-profile`` records (and side files) for the windows, then the episodes' trees."""
    store = RecordStore(session.path)  # the writer is gone: this also recovers its buffer
    try:
        records = session.records().records
        for profile in profiles:
            store.write(_profile_record(session.path, profile))
        episodes = read_highload(session.path, records, is_hawkwatch=True).value
        loads = {r.key: r for r in records if r.collection == c.CPU_HIGHLOAD}
        for episode in episodes:
            tree = episode_tree(episode, profiles)
            if tree is None or episode.key not in loads:
                continue
            try:
                load = CpuHighLoad.from_record(loads[episode.key])
            except RecordError:
                continue
            with open(session.path / c.CPU_HIGHLOAD_STACKFRAME_EXT, "ab") as f:
                f.write(episode.key.encode() + b"," + tree + EXT_RECORD_END.encode())
            store.write(msgspec.structs.replace(load, sampler=PY_SPY), key=episode.key)
    finally:
        store.close()


def episode_tree(episode: HighLoadEpisode, profiles: Sequence[Profile]) -> bytes | None:
    """MTHawkeye's node list from the cpu samples of every window overlapping the episode, each
    window's counts cut to the share of it inside the episode (thread pseudo-frames dropped: the
    agent's episode trees start at the outermost Python frame), as JSON; None when no window
    overlaps it.

    py-spy's raw output has counts, not sample times (its chrometrace output has times but only
    where a stack changes, not per sample), so a window can only be weighted: a window half
    inside gives half its samples, spread over its stacks in proportion. Taking only windows
    mostly inside left an episode shorter than about two windows with none, and its tree
    silently the in-process sampler's."""
    start, end = episode.start_time, episode.start_time + episode.lasting_s
    stacks: list[tuple[tuple[PyFrame, ...], int]] = []
    for profile in profiles:
        inside = min(end, profile.start_time + profile.duration_s) - max(start, profile.start_time)
        if inside <= 0:
            continue
        window: dict[tuple[PyFrame, ...], int] = {}
        for stack, count in profile.stacks("cpu"):
            frames = tuple(f for f in stack if not is_thread_frame(f))
            window[frames] = window.get(frames, 0) + count
        total = sum(window.values())
        kept = min(total, round(total * inside / profile.duration_s))
        stacks.extend(scaled(window, kept, total).items())
    roots = build_roots(stacks)
    return msgspec.json.encode(tree_nodes(roots)) if roots else None


def _profile_record(folder: Path, profile: Profile) -> CpuProfile:
    """The window's record; one of 15 KB or more goes to a side file, the record keeps a summary."""
    window = CpuProfile.of(profile)
    value = window.encode_value()
    if len(value) < EXT_THRESHOLD_BYTES:
        return window
    name = f"{c.CPU_PROFILE_DIR}/py-spy-{window.record_key()}.json"
    side = folder / name
    side.parent.mkdir(exist_ok=True)
    side.write_bytes(value)
    return window.summary(name)
