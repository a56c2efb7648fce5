"""JetsamEvent ``.ips`` files (``bug_type`` 298): memory kills on iOS.

Spec: ``formats/apple-crash.md`` §4. Line 1 is the IPS metadata
(``{"bug_type":"298","timestamp":…,"os_version":…,"incident_id":…}``), the rest one JSON object:
``product``, ``build``, ``date``, ``largestProcess``, ``memoryStatus{pageSize, memoryPages{…}}``
and ``processes[]`` {``name`` (cut to 32 chars), ``pid``, ``uuid``, ``states[]``, ``rpages``,
``lifetimeMax``, and on killed processes ``reason`` (kernel kill cause) and ``killDelta``}.

``footprint = rpages × pageSize``; for a process killed with ``per-process-limit`` that is its
memory limit. Hand-edited or truncated files are read as far as they go.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final

from hawkwatch.errors import FormatError
from hawkwatch.formats._crash_values import (
    as_dict,
    as_int,
    as_list,
    as_text,
    decode_text,
    iso_timestamp,
    loads_lenient,
)
from hawkwatch.formats._input import read_input
from hawkwatch.formats.ips import JETSAM_BUG_TYPE, split_ips
from hawkwatch.model import Parsed, Skipped
from hawkwatch.model.jetsam import JetsamEvent, JetsamProcess
from hawkwatch.model.text import excerpt

MAX_BYTES: Final = 16 * 1024 * 1024
"""JetsamEvents are some hundred KB; larger input is refused rather than parsed for minutes."""
DEFAULT_PAGE_SIZE: Final = 16_384  # A9 and later; only used when the file does not say


def parse_jetsam(data: bytes | str, *, source: str = "<bytes>") -> Parsed[JetsamEvent]:
    """Parse a JetsamEvent; ``FormatError`` when the file is not one."""
    try:
        return _parse_jetsam(data, source)
    except RecursionError:
        raise FormatError(source, "nested too deeply to be a JetsamEvent") from None


def _parse_jetsam(data: bytes | str, source: str) -> Parsed[JetsamEvent]:
    text = decode_text(data)
    header, body_text = split_ips(text, source=source)
    if str(header.get("bug_type", "")) != JETSAM_BUG_TYPE:
        raise FormatError(
            source, f"bug_type {excerpt(header.get('bug_type', '?'))} is not a JetsamEvent (298)"
        )
    try:
        body, truncated = loads_lenient(body_text)
    except ValueError as exc:
        raise FormatError(source, f"the JetsamEvent body is not JSON ({exc})") from exc
    if not isinstance(body, dict):
        raise FormatError(source, "the JetsamEvent body is not a JSON object")
    skipped: list[Skipped] = []
    if truncated:
        skipped.append(Skipped(0, "body is truncated; read up to the last complete value"))
    status = as_dict(body.get("memoryStatus"))
    page_size = as_int(status.get("pageSize")) or as_int(body.get("pageSize"))
    if page_size is None:
        skipped.append(Skipped(0, f"no memoryStatus.pageSize; assumed {DEFAULT_PAGE_SIZE}"))
    size = page_size or DEFAULT_PAGE_SIZE
    processes = []
    for index, raw in enumerate(as_list(body.get("processes"))):
        process = _process(raw, size)
        if process is None:
            skipped.append(Skipped(index, "process entry without a name"))
        else:
            processes.append(process)
    stamp = as_text(header.get("timestamp")) or as_text(body.get("date"))
    pages = {
        key: value
        for key, value in as_dict(status.get("memoryPages")).items()
        if as_int(value) is not None and isinstance(value, int)
    }
    event = JetsamEvent(
        incident_id=as_text(header.get("incident_id")) or as_text(body.get("incident")),
        timestamp=(iso_timestamp(stamp) or stamp) if stamp else None,
        os_version=as_text(header.get("os_version")) or as_text(body.get("build")),
        product=as_text(body.get("product")),
        page_size=page_size,
        largest_process=as_text(body.get("largestProcess")),
        memory_pages=pages,
        processes=tuple(processes),
    )
    return Parsed(event, skipped)


def read_jetsam(path: str | os.PathLike[str]) -> Parsed[JetsamEvent]:
    """Read a ``JetsamEvent-*.ips`` file."""
    target = Path(path).expanduser()
    return parse_jetsam(read_input(target, MAX_BYTES, "a JetsamEvent"), source=str(target))


def _process(raw: Any, page_size: int) -> JetsamProcess | None:
    entry = as_dict(raw)
    name = as_text(entry.get("name"))
    if name is None:
        return None
    rpages = as_int(entry.get("rpages"))
    peak = as_int(entry.get("lifetimeMax"))
    return JetsamProcess(
        name=name,
        pid=as_int(entry.get("pid")),
        uuid=as_text(entry.get("uuid")),
        states=tuple(state for state in as_list(entry.get("states")) if isinstance(state, str)),
        rpages=rpages,
        lifetime_max=peak,
        reason=as_text(entry.get("reason")),
        footprint_bytes=rpages * page_size if rpages is not None else None,
        peak_bytes=peak * page_size if peak is not None else None,
    )
