"""Which crash format is this? One entry point that picks the reader.

Rules (``formats/apple-crash.md`` §1), applied to the first bytes:

* a folder → an MTHawkeye session: ``anr`` / ``cpu-highload-stackframe`` address stacks;
* a one-line JSON object with ``bug_type`` followed by a body → ``.ips`` (``309`` JSON body,
  ``109`` text body; ``298`` is a JetsamEvent and is refused with a pointer to
  ``hawkwatch jetsam``);
* a single JSON object with ``report`` and ``crash`` (or ``recrash_report``) → KSCrash;
* ``Key: value`` headers, ``Thread N:`` or ``Binary Images:`` → Apple text.

Anything else raises ``FormatError`` with one line saying what the file looked like.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from hawkwatch.errors import FormatError
from hawkwatch.formats._crash_values import TooDeep, raw_decode
from hawkwatch.formats._input import read_input
from hawkwatch.formats.apple_crash import looks_like_apple_text, parse_apple_crash
from hawkwatch.formats.ips import JETSAM_BUG_TYPE, parse_ips
from hawkwatch.formats.kscrash import looks_like_kscrash, parse_kscrash
from hawkwatch.model import Parsed
from hawkwatch.model.crash import CrashReport

APPLE_TEXT: Final = "apple-text"
IPS: Final = "ips"
KSCRASH: Final = "kscrash"
JETSAM: Final = "jetsam"
HAWKEYE: Final = "hawkeye"
# Crash files are small (Apple's rarely pass 1 MiB, KSCrash's a few); refuse to slurp something
# enormous by mistake: 16 MiB parse in seconds and a few hundred MB.
MAX_BYTES: Final = 16 * 1024 * 1024


def sniff_crash(data: bytes) -> str | None:
    """The format name of a crash file's bytes, or None when it is not one we read."""
    text = _text(data)
    if text is None:
        return None
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            first, end = raw_decode(stripped)
        except TooDeep:
            return KSCRASH  # its reader says why it cannot be read
        except ValueError:
            first, end = None, 0
        if isinstance(first, dict) and "bug_type" in first and stripped[end:].strip():
            return JETSAM if str(first.get("bug_type")) == JETSAM_BUG_TYPE else IPS
        if first is None or looks_like_kscrash(first):
            # an unparseable (truncated) JSON document is given to the KSCrash reader, which
            # recovers what it can or says it is not one
            return KSCRASH
        return None
    if looks_like_apple_text(stripped):
        return APPLE_TEXT
    return None


def parse_crash(data: bytes, source: str = "<bytes>") -> Parsed[CrashReport]:
    """Parse the bytes of a crash report in any supported file format."""
    try:
        return _parse_crash(data, source)
    except RecursionError:  # a structure the model code cannot walk: damage, not a report
        raise FormatError(source, "nested too deeply to be a crash report") from None


def _parse_crash(data: bytes, source: str) -> Parsed[CrashReport]:
    kind = sniff_crash(data)
    if kind == IPS:
        return parse_ips(data, source=source)
    if kind == KSCRASH:
        return parse_kscrash(data, source=source)
    if kind == APPLE_TEXT:
        return parse_apple_crash(data, source=source)
    if kind == JETSAM:
        raise FormatError(
            source, "a JetsamEvent (bug_type 298), not a crash report; use 'hawkwatch jetsam'"
        )
    raise FormatError(source, _what_it_is(data))


def read_crash(path: str | os.PathLike[str]) -> Parsed[CrashReport]:
    """Read a crash report file, or the address stacks of an MTHawkeye session folder."""
    target = Path(path).expanduser()
    if target.is_dir():
        from hawkwatch.formats.hawkeye_stacks import read_session_stacks

        return read_session_stacks(target)
    data = read_input(target, MAX_BYTES, "a crash report")
    return parse_crash(data, source=str(target))


def _text(data: bytes) -> str | None:
    if not data.strip():
        return None
    if b"\x00" in data[:4096]:
        return None
    text = data.decode("utf-8", errors="replace")
    return text.removeprefix("\ufeff")


def _what_it_is(data: bytes) -> str:
    if not data.strip():
        return "empty file; not a crash report"
    if b"\x00" in data[:4096]:
        return "binary data; not a crash report (.crash, .ips or KSCrash JSON)"
    return "not a crash report: expected Apple .crash text, an .ips file or KSCrash JSON"
