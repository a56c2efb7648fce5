"""MTHawkeye's CPU-trace records: ``cpu-highload``, ``cpu-highload-stackframe`` and the side file
``cpu-highload-stackframe-ext`` — read from iOS sessions and from hawkwatch's own.

Spec: ``formats/hawkeye.md`` §4 and §5.3, ``detectors.md`` §2.1 (MTHawkeye 0.12.8).

* ``cpu-highload``: key = start, value ``{"start": "<key>", "lasting": "%.2f" s,
  "average": "%.2f" %}`` (strings; numbers accepted too). hawkwatch adds ``threads``:
  ``[{name, native_id, share}]``. MTHawkeye's times are CFAbsoluteTime (seconds since
  2001-01-01 UTC; add 978,307,200), hawkwatch's Unix seconds.
* ``cpu-highload-stackframe``: same key, a JSON array of ``{frame, count, proportion,
  children?}`` nodes, outermost frames at the roots; ``frame`` is ``0x…`` (MTHawkeye) or
  ``func (file:line)`` (hawkwatch).
* ``cpu-highload-stackframe-ext``: records ``<key>,<json>`` each followed by ``·`` (U+00B7);
  split on the delimiter, then at the first comma (MTHawkeye's own reader splits at every comma
  and so never recovers one).

A key written several times (hawkwatch rewrites a long episode) keeps its last value; the
side file wins over a record of the same key. The result is plain ``HighLoadEpisode`` data, so
symbolication can map the address frames of the trees afterwards.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final, Literal

from hawkwatch.errors import FormatError
from hawkwatch.model import Parsed, Record, Skipped
from hawkwatch.model import collections as c
from hawkwatch.model.profile import (
    EXT_RECORD_END,
    CallNode,
    HighLoadEpisode,
    ThreadShare,
    calltree_from_json,
)

CF_ABSOLUTE_EPOCH: Final = 978_307_200.0
"""Unix time of 2001-01-01 00:00:00 UTC, CFAbsoluteTime's origin."""

TimeBase = Literal["unix", "cfabsolute"]


def parse_stackframe_ext(data: bytes) -> Parsed[dict[str, tuple[CallNode, ...]]]:
    """Trees by key from a ``cpu-highload-stackframe-ext`` file; a cut last record is skipped."""
    text = data.decode("utf-8", errors="replace")
    trees: dict[str, tuple[CallNode, ...]] = {}
    skipped: list[Skipped] = []
    for number, chunk in enumerate(text.split(EXT_RECORD_END), start=1):
        if not chunk.strip():
            continue
        key, sep, body = chunk.partition(",")
        key = key.strip()
        if not sep or not key:
            skipped.append(Skipped(number, "ext record without a '<key>,' prefix"))
            continue
        try:
            trees[key] = calltree_from_json(json.loads(body))
        except (ValueError, RecursionError) as exc:
            skipped.append(Skipped(number, f"ext record {key}: {_reason(exc)}"))
    return Parsed(trees, skipped)


def parse_highload(
    records: Iterable[Record], *, ext: bytes = b"", time_base: TimeBase = "unix"
) -> Parsed[list[HighLoadEpisode]]:
    """Episodes, oldest first, from a session's records and its ext side file's bytes.

    ``skipped`` lines are numbered by position among the CPU records (ext: by ext record).
    """
    values: dict[str, tuple[int, str]] = {}
    trees: dict[str, tuple[int, str]] = {}
    for number, record in enumerate(records, start=1):
        if record.collection == c.CPU_HIGHLOAD:
            values[record.key] = (number, record.value)
        elif record.collection == c.CPU_HIGHLOAD_STACKFRAME:
            trees[record.key] = (number, record.value)
    skipped: list[Skipped] = []
    ext_trees: dict[str, tuple[CallNode, ...]] = {}
    if ext:
        parsed_ext = parse_stackframe_ext(ext)
        ext_trees, skipped = parsed_ext.value, list(parsed_ext.skipped)
    shift = CF_ABSOLUTE_EPOCH if time_base == "cfabsolute" else 0.0
    episodes: list[HighLoadEpisode] = []
    for key, (number, value) in values.items():
        try:
            data = json.loads(value)
            if not isinstance(data, dict):
                raise ValueError("value is not a JSON object")
            start = _number(data.get("start", key), "start")
            lasting = _number(data.get("lasting"), "lasting")
            average = _number(data.get("average"), "average")
        except (ValueError, RecursionError) as exc:
            skipped.append(Skipped(number, f"cpu-highload {key}: {_reason(exc)}"))
            continue
        roots = ext_trees.get(key)
        if roots is None and key in trees:
            tree_number, tree_value = trees[key]
            try:
                roots = calltree_from_json(json.loads(tree_value))
            except (ValueError, RecursionError) as exc:
                skipped.append(
                    Skipped(tree_number, f"cpu-highload-stackframe {key}: {_reason(exc)}")
                )
        episodes.append(
            HighLoadEpisode(
                key=key,
                start_time=start + shift,
                lasting_s=lasting,
                average_percent=average,
                roots=roots or (),
                threads=_threads(data.get("threads")),
                sampler=sampler if isinstance(sampler := data.get("sampler"), str) else "",
            )
        )
    episodes.sort(key=lambda episode: episode.start_time)
    return Parsed(episodes, skipped)


def read_highload(
    folder: str | Path, records: Iterable[Record], *, is_hawkwatch: bool
) -> Parsed[list[HighLoadEpisode]]:
    """Episodes of a session folder: its records plus its ext side file, if any."""
    path = Path(folder) / c.CPU_HIGHLOAD_STACKFRAME_EXT
    try:
        ext = path.read_bytes()
    except FileNotFoundError:
        ext = b""
    except OSError as exc:
        raise FormatError(str(path), f"cannot read: {exc.strerror}") from exc
    return parse_highload(records, ext=ext, time_base="unix" if is_hawkwatch else "cfabsolute")


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{name!r} is not a number")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name!r} is not a number") from None
    if not math.isfinite(number) or abs(number) > 1e15:
        raise ValueError(f"{name!r} is out of range")
    return number


def _threads(value: Any) -> tuple[ThreadShare, ...]:
    if not isinstance(value, list):
        return ()
    shares: list[ThreadShare] = []
    for item in value:
        if not isinstance(item, dict):
            continue
        name, tid, share = item.get("name"), item.get("native_id"), item.get("share")
        if isinstance(name, str) and type(tid) is int and isinstance(share, int | float):
            shares.append(ThreadShare(name, tid, float(share)))
    return tuple(shares)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if isinstance(exc, json.JSONDecodeError):
        return "not JSON (truncated?)"
    return str(exc)
