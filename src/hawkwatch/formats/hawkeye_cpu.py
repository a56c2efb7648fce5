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

from collections.abc import Iterable
from pathlib import Path

from hawkwatch.errors import FormatError, StoreError
from hawkwatch.model import Parsed, Record, Skipped
from hawkwatch.model import collections as c
from hawkwatch.model.profile import EXT_RECORD_END, CallNode, HighLoadEpisode
from hawkwatch.model.records import (
    CF_ABSOLUTE_EPOCH,
    CpuHighLoad,
    CpuHighLoadStackframe,
    RecordError,
    TimeBase,
    decode_json,
)
from hawkwatch.store.files import read_side_file

__all__ = ["CF_ABSOLUTE_EPOCH", "parse_highload", "parse_stackframe_ext", "read_highload"]


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
            trees[key] = CpuHighLoadStackframe.from_value(decode_json(body), key).roots
        except RecordError as exc:
            skipped.append(Skipped(number, f"ext record {key}: {exc}"))
    return Parsed(trees, skipped)


def parse_highload(
    records: Iterable[Record], *, ext: bytes = b"", time_base: TimeBase = "unix"
) -> Parsed[list[HighLoadEpisode]]:
    """Episodes, oldest first, from a session's records and its ext side file's bytes.

    ``skipped`` lines are numbered by position among the CPU records (ext: by ext record).
    """
    values: dict[str, tuple[int, Record]] = {}
    trees: dict[str, tuple[int, Record]] = {}
    for number, record in enumerate(records, start=1):
        if record.collection == c.CPU_HIGHLOAD:
            values[record.key] = (number, record)
        elif record.collection == c.CPU_HIGHLOAD_STACKFRAME:
            trees[record.key] = (number, record)
    skipped: list[Skipped] = []
    ext_trees: dict[str, tuple[CallNode, ...]] = {}
    if ext:
        parsed_ext = parse_stackframe_ext(ext)
        ext_trees, skipped = parsed_ext.value, list(parsed_ext.skipped)
    episodes: list[HighLoadEpisode] = []
    for key, (number, record) in values.items():
        try:
            episode = CpuHighLoad.from_record(record)
        except RecordError as exc:
            skipped.append(Skipped(number, f"cpu-highload {key}: {exc}"))
            continue
        roots = ext_trees.get(key)
        if roots is None and key in trees:
            tree_number, tree_record = trees[key]
            try:
                roots = CpuHighLoadStackframe.from_record(tree_record).roots
            except RecordError as exc:
                skipped.append(Skipped(tree_number, f"cpu-highload-stackframe {key}: {exc}"))
        episodes.append(
            HighLoadEpisode(
                key=key,
                start_time=episode.start_unix(time_base),
                lasting_s=episode.lasting,
                average_percent=episode.average,
                roots=roots or (),
                threads=episode.thread_shares(),
                sampler=episode.sampler or "",
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
        ext = read_side_file(path)
    except StoreError as exc:
        raise FormatError(str(path), str(exc).removeprefix(f"{path}: ")) from exc
    return parse_highload(records, ext=ext, time_base="unix" if is_hawkwatch else "cfabsolute")
