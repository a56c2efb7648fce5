"""A crash report in Apple's classic ``.crash`` text layout, whatever format it was read from.

So an ``.ips`` or a KSCrash JSON report reads like the reports Xcode and atos users know:
header, exception block, application-specific information, last exception backtrace, threads
(frame number, image, address, ``symbol + offset (file:line)``), the crashed thread's registers
and ``Binary Images:``. Frames carrying symbolication results are expanded: every inlined call
gets its own numbered line marked ``[inlined]``, at the same address, innermost first (as
Xcode prints them). A frame without a symbol shows ``load address + offset``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import PurePosixPath
from typing import TextIO

from hawkwatch.api.symbols import SymbolicatedCrash
from hawkwatch.model.crash import CrashFrame, CrashImage, CrashReport, CrashThread, SourceLocation

# headers printed from the typed fields (or the exception block), never twice from metadata
_TYPED_HEADERS = frozenset(
    {
        "Incident Identifier",
        "Hardware Model",
        "Process",
        "Path",
        "Identifier",
        "Version",
        "Code Type",
        "Date/Time",
        "OS Version",
        "Report Version",
        "Exception Type",
        "Exception Subtype",
        "Exception Codes",
        "Exception Message",
        "Exception Reason",
        "Exception Note",
        "Termination Reason",
        "Termination Signal",
        "Triggered by Thread",
        "Crashed Thread",
        "Application Specific Information",
        "Last Exception Backtrace",
    }
)
_CODE_TYPES = {
    "arm64": "ARM-64",
    "arm64e": "ARM-64",
    "x86_64": "X86-64",
    "x86": "X86",
    "i386": "X86",
}
# 32-bit processes print addresses with 8 hex digits, 64-bit ones with 16
_32_BIT = ("arm", "armv6", "armv7", "armv7s", "armv7k", "x86", "i386")
_IMAGE_COLUMN = 30


def _apple_time(iso: str) -> str:
    """ISO-8601 as Apple writes ``Date/Time``: ``2026-07-23 01:29:01.9680 +0000``."""
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        return iso
    text = moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 100:04d}"
    offset = moment.strftime("%z")
    return f"{text} {offset}" if offset else text


def render_symbolicated(result: SymbolicatedCrash, file: TextIO) -> None:
    file.write(render_crash_text(result.report, result.missing))


def render_crash_text(report: CrashReport, missing: Iterable[CrashImage] = ()) -> str:
    """The whole report as text; ``missing`` lists images that had no debug file."""
    return "\n".join(_lines(report, list(missing))) + "\n"


def _lines(report: CrashReport, missing: list[CrashImage]) -> Iterator[str]:
    yield from _header(report)
    yield ""
    yield from _exception(report)
    if report.application_specific_info:
        yield ""
        yield "Application Specific Information:"
        yield report.application_specific_info.rstrip()
    if report.last_exception_backtrace:
        yield ""
        yield "Last Exception Backtrace:"
        yield from _frames(report, report.last_exception_backtrace)
    for thread in report.threads:
        yield ""
        yield from _thread(report, thread)
    crashed = report.crashed_thread
    if crashed is not None and crashed.registers:
        yield ""
        yield from _registers(report, crashed)
    yield ""
    yield "Binary Images:"
    for image in report.images:
        yield _image_line(image)
    if missing:
        yield ""
        yield "Images without debug files:"
        for image in missing:
            yield f"{image.name}  <{image.debug_id or 'no UUID'}>"
    if report.recrash is not None:
        yield ""
        yield "Recrash (a crash inside the crash handler):"
        yield ""
        yield from _lines(report.recrash, [])


def _field(name: str, value: object) -> str:
    return f"{name + ':':<21}{value}"


def _header(report: CrashReport) -> Iterator[str]:
    if report.incident_id:
        yield _field("Incident Identifier", report.incident_id)
    if report.hardware_model:
        yield _field("Hardware Model", report.hardware_model)
    if report.process:
        pid = f" [{report.pid}]" if report.pid is not None else ""
        yield _field("Process", report.process + pid)
    if report.process_path:
        yield _field("Path", report.process_path)
    if report.bundle_id:
        yield _field("Identifier", report.bundle_id)
    if report.app_version:
        yield _field("Version", report.app_version)
    if report.arch:
        code_type = "ARM" if report.arch.startswith("armv") else report.arch.upper()
        yield _field("Code Type", _CODE_TYPES.get(report.arch, code_type))
    if report.format == "apple-text":  # every other header, as the original report had it
        for key, value in report.metadata.items():
            if key not in _TYPED_HEADERS and "\n" not in value:
                yield _field(key, value)
    yield ""
    if report.timestamp:
        yield _field("Date/Time", report.metadata.get("Date/Time") or _apple_time(report.timestamp))
    if report.os_version:
        yield _field("OS Version", report.os_version)
    yield _field("Report Version", report.metadata.get("Report Version", "104"))


def _exception(report: CrashReport) -> Iterator[str]:
    exception = report.exception
    if exception.type or exception.signal:
        kind = exception.type or exception.signal
        signal = f" ({exception.signal})" if exception.type and exception.signal else ""
        yield f"Exception Type:  {kind}{signal}"
    if exception.subtype:
        yield f"Exception Subtype: {exception.subtype}"
    if exception.codes:
        yield f"Exception Codes: {exception.codes}"
    if exception.name or exception.reason:
        name = f"{exception.name}: " if exception.name else ""
        yield f"Exception Reason: {name}{exception.reason or ''}".rstrip()
    termination = report.metadata.get("Termination Reason")
    if termination:
        yield f"Termination Reason: {termination}"
    crashed = report.crashed_thread
    if crashed is not None:
        yield f"Triggered by Thread:  {crashed.index}"


def _thread(report: CrashReport, thread: CrashThread) -> Iterator[str]:
    if thread.name:
        yield f"Thread {thread.index} name:  {thread.name}"
    if thread.queue:
        yield f"Thread {thread.index} name:  Dispatch queue: {thread.queue}"
    yield f"Thread {thread.index}{' Crashed' if thread.crashed else ''}:"
    yield from _frames(report, thread.frames)


def _frames(report: CrashReport, frames: list[CrashFrame]) -> Iterator[str]:
    number = 0
    digits = 8 if report.arch in _32_BIT else 16
    for frame in frames:
        image = report.image_for(frame)
        name = frame.image or (image.name if image else "???")
        prefix = f"{name:<{_IMAGE_COLUMN}}\t0x{frame.address:0{digits}x} "
        if frame.symbolicated:
            for location in frame.symbolicated:
                yield f"{number:<4}{prefix}{_location(location)}"
                number += 1
            continue
        yield f"{number:<4}{prefix}{_unresolved(frame, image)}"
        number += 1


def _location(location: SourceLocation) -> str:
    text = location.symbol
    if location.symbol_offset is not None and not location.inlined:
        text += f" + {location.symbol_offset}"
    if location.file:
        line = f":{location.line}" if location.line else ""
        text += f" ({PurePosixPath(location.file).name}{line})"
    return text + (" [inlined]" if location.inlined else "")


def _unresolved(frame: CrashFrame, image: CrashImage | None) -> str:
    if frame.symbol:
        return _location(
            SourceLocation(frame.symbol, frame.file, frame.line, frame.symbol_offset, frame.inlined)
        )
    if image is not None:
        return f"0x{image.load_address:x} + {frame.address - image.load_address}"
    return f"0x{frame.address:x}"


def _registers(report: CrashReport, thread: CrashThread) -> Iterator[str]:
    arch = report.arch or ""
    flavor = "X86 Thread State (64-bit)" if arch.startswith("x86") else "ARM Thread State (64-bit)"
    yield f"Thread {thread.index} crashed with {flavor}:"
    cells = [f"{name:>6}: 0x{value:016x}" for name, value in thread.registers.items()]
    for start in range(0, len(cells), 4):
        yield "  ".join(cells[start : start + 4])


def _image_line(image: CrashImage) -> str:
    end = f"0x{image.end_address:x}" if image.end_address is not None else "?"
    arch = f" {image.arch} " if image.arch else " "
    uuid = f" <{image.debug_id}>" if image.debug_id else ""
    path = f" {image.path}" if image.path else ""
    return f"{f'0x{image.load_address:x}':>18} - {end:>18} {image.name}{arch}{uuid}{path}"
