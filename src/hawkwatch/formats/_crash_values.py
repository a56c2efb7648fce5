"""Small value helpers shared by the crash readers: lenient JSON, dates, numbers, arch names.

Crash files are cut short by nature (the process died while writing), so ``loads_lenient``
closes a truncated JSON document at its last complete value instead of giving up.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any, Final

_DATE: Final = re.compile(
    r"^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d+))?\s*(Z|[+-]\d{2}:?\d{2})?\s*$"
)

_CODE_TYPES: Final = {
    "ARM-64": "arm64",
    "ARM64": "arm64",
    "ARM64E": "arm64e",
    "ARM": "arm",
    "X86-64": "x86_64",
    "X86_64": "x86_64",
    "X86": "i386",
    "PPC": "ppc",
}

# Mach-O cpu_type / cpu_subtype (KSCrash writes them as numbers).
_CPU_ARM: Final = 12
_CPU_ARM64: Final = 0x0100000C
_CPU_X86: Final = 7
_CPU_X86_64: Final = 0x01000007
_ARM_SUBTYPES: Final = {6: "armv6", 9: "armv7", 11: "armv7s", 12: "armv7k", 13: "armv8"}


class TruncatedJSON(ValueError):
    """Nothing complete could be recovered from the text."""


MAX_DEPTH: Final = 500
"""Deeper JSON is no crash report (KSCrash and .ips nest a dozen levels)."""


class TooDeep(ValueError):
    """JSON nested deeper than Python's decoder can follow; no crash report looks like that."""

    def __init__(self) -> None:
        super().__init__("nested too deeply to be a crash report")


def loads_lenient(text: str) -> tuple[Any, bool]:
    """``(value, was_truncated)``: the document, or its longest prefix closed at a complete value.

    Raises ``ValueError`` when the text does not start like JSON, nothing complete is left, or
    it is nested too deeply (``TooDeep``; never a ``RecursionError``).
    """
    try:
        return json.loads(text), False
    except RecursionError:
        raise TooDeep() from None
    except ValueError:
        pass
    start = len(text) - len(text.lstrip())
    value, _end = _raw_decode_prefix(text, start)
    if value is not None:
        return value, False
    repaired = _close_truncated(text, start)
    if repaired is None:
        raise TruncatedJSON("no complete JSON value")
    try:
        return json.loads(repaired), True
    except RecursionError:
        raise TooDeep() from None


def raw_decode(text: str, start: int = 0) -> tuple[Any, int]:
    """``JSONDecoder.raw_decode`` that raises only ``ValueError`` (``TooDeep`` for nesting)."""
    try:
        return json.JSONDecoder().raw_decode(text, start)
    except RecursionError:
        raise TooDeep() from None


def _raw_decode_prefix(text: str, start: int) -> tuple[Any, int]:
    """A complete first value followed by other text (``.ips`` bodies with a trailer)."""
    try:
        value, end = raw_decode(text, start)
    except TooDeep:
        raise
    except ValueError:
        return None, start
    return value, end


# A JSON string (possibly cut off at the end of the text) or one structural character.
_JSON_TOKEN: Final = re.compile(r'"(?:[^"\\]|\\.)*(?:"|\Z)|[{}\[\],]', re.DOTALL)


def _close_truncated(text: str, start: int) -> str | None:
    """Cut after the last complete element and append the missing closing brackets.

    Cuts sit right after an opening bracket (an empty container is valid), after a closing
    bracket, or before a comma (the element before it is complete), never inside a value.
    Every token that changes the bracket stack is also a cut, so the stack at the end of the
    scan is the stack at the last cut. Nesting past ``MAX_DEPTH`` is ``TooDeep`` at once.
    """
    if start >= len(text) or text[start] not in "{[":
        return None
    stack: list[str] = []
    cut: int | None = None
    for match in _JSON_TOKEN.finditer(text, start):
        token = match.group()
        if token[0] == '"':
            continue
        if token in "{[":
            stack.append("}" if token == "{" else "]")
            if len(stack) > MAX_DEPTH:
                raise TooDeep()
            cut = match.end()
        elif token in "}]":
            if not stack:
                return None
            stack.pop()
            if not stack:
                return text[start : match.end()]
            cut = match.end()
        else:  # ","
            cut = match.start()
    if cut is None:
        return None
    return text[start:cut].rstrip() + "".join(reversed(stack))


def decode_text(data: bytes | str) -> str:
    """Bytes as text (bad UTF-8 replaced, not fatal), without a leading byte-order mark."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    return text.removeprefix("\ufeff")


def iso_timestamp(value: str) -> str | None:
    """Apple's ``YYYY-MM-DD HH:MM:SS[.f] ±HHMM`` as ISO-8601, or None when it does not parse."""
    match = _DATE.match(value.strip())
    if not match:
        return None
    day, clock, fraction, zone = match.groups()
    text = f"{day}T{clock}"
    if fraction:
        text += "." + (fraction + "000000")[:6]
    if zone:
        text += "+00:00" if zone == "Z" else f"{zone[:3]}:{zone[-2:]}"
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return None
    return text


def iso_from_epoch(value: float) -> str | None:
    """Seconds, milliseconds or microseconds since 1970 (KSCrash, by magnitude) as ISO-8601."""
    if value > 1e14:
        value /= 1e6
    elif value > 1e11:
        value /= 1e3
    try:
        return datetime.fromtimestamp(value, UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        return None


def arch_from_code_type(code_type: str) -> str:
    """``ARM-64 (Native)`` → ``arm64``; unknown values come back as written."""
    head = code_type.split("(", maxsplit=1)[0].strip()
    return _CODE_TYPES.get(head.upper(), head or code_type)


def arch_from_cpu(cpu_type: object, cpu_subtype: object) -> str | None:
    """Mach-O cpu type numbers as an arch name (KSCrash ``binary_images``)."""
    if not isinstance(cpu_type, int):
        return None
    subtype = cpu_subtype & 0xFFFFFF if isinstance(cpu_subtype, int) else None
    if cpu_type == _CPU_ARM64:
        return "arm64e" if subtype == 2 else "arm64"
    if cpu_type == _CPU_ARM:
        return _ARM_SUBTYPES.get(subtype or 0, "arm")
    if cpu_type == _CPU_X86_64:
        return "x86_64"
    if cpu_type == _CPU_X86:
        return "i386"
    return None


MAX_INT: Final = 2**64
"""Addresses, sizes, pids and counts in crash reports all fit in 64 bits; larger is damage."""


def as_int(value: object) -> int | None:
    """A JSON integer (not a bool), or a ``0x…``/decimal string; None beyond ±2**64."""
    if isinstance(value, bool):
        return None
    number: int | None = None
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and len(value) <= 64:
        text = value.strip()
        try:
            number = int(text, 16) if text.lower().startswith("0x") else int(text)
        except ValueError:
            return None
    if number is None or not -MAX_INT < number < MAX_INT:
        return None
    return number


def as_text(value: object) -> str | None:
    """A non-empty string, or None."""
    return value if isinstance(value, str) and value else None


def as_dict(value: object) -> dict[str, Any]:
    """The value if it is a JSON object, else an empty dict."""
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    """The value if it is a JSON array, else an empty list."""
    return value if isinstance(value, list) else []


def basename(path: str) -> str:
    """The last component of a POSIX path (device paths, not this machine's)."""
    return path.rstrip("/").rsplit("/", 1)[-1] or path
