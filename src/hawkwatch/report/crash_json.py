"""The crash model as JSON (``hawkwatch-crash``): what ``hawkwatch symbolicate --json`` prints.

Top level: ``format``, ``format_version``, then the report; ``source_format`` says what it was
read from (``apple-text``, ``ips``, ``kscrash``).

Addresses are hex strings (``"0x1045490f0"``: 64-bit values lose precision as JSON numbers in
most readers). Each frame carries ``address``, ``image``, ``symbol``, ``symbol_offset``, ``file``,
``line``, ``inlined`` and ``symbolicated`` (true when a debug file answered); a frame whose
address sits in inlined code is expanded into one entry per inlined call, innermost first, all
but the last with ``inlined: true`` — the shape ``.ips`` files use.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from hawkwatch.api.symbols import SymbolicatedCrash
from hawkwatch.model.crash import CrashFrame, CrashImage, CrashReport, CrashThread
from hawkwatch.report._json import document

FORMAT: Final = "hawkwatch-crash"
FORMAT_VERSION: Final = 1


def crash_to_json(report: CrashReport, missing: Iterable[CrashImage] = ()) -> dict[str, Any]:
    """A JSON-ready dict of ``report``; ``missing`` lists images that had no debug file."""
    body = _report(report)
    body["missing_debug_files"] = [
        {"name": image.name, "uuid": image.uuid, "debug_id": image.debug_id} for image in missing
    ]
    return document(FORMAT, FORMAT_VERSION, body)


def symbolicated_to_json(result: SymbolicatedCrash) -> dict[str, Any]:
    return crash_to_json(result.report, result.missing)


def _hex(value: int | None) -> str | None:
    return None if value is None else f"0x{value:x}"


def _report(report: CrashReport) -> dict[str, Any]:
    exception = report.exception
    return {
        "source_format": report.format,
        "incident_id": report.incident_id,
        "timestamp": report.timestamp,
        "process": report.process,
        "pid": report.pid,
        "process_path": report.process_path,
        "bundle_id": report.bundle_id,
        "app_version": report.app_version,
        "os_version": report.os_version,
        "hardware_model": report.hardware_model,
        "arch": report.arch,
        "exception": {
            "type": exception.type,
            "signal": exception.signal,
            "codes": exception.codes,
            "subtype": exception.subtype,
            "name": exception.name,
            "reason": exception.reason,
            "address": _hex(exception.address),
        },
        "application_specific_info": report.application_specific_info,
        "last_exception_backtrace": _frames(report, report.last_exception_backtrace),
        "threads": [_thread(report, thread) for thread in report.threads],
        "images": [_image(image) for image in report.images],
        "metadata": report.metadata,
        "recrash": _report(report.recrash) if report.recrash is not None else None,
    }


def _thread(report: CrashReport, thread: CrashThread) -> dict[str, Any]:
    return {
        "index": thread.index,
        "name": thread.name,
        "queue": thread.queue,
        "crashed": thread.crashed,
        "frames": _frames(report, thread.frames),
        "registers": {name: _hex(value) for name, value in thread.registers.items()},
    }


def _frames(report: CrashReport, frames: list[CrashFrame]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for frame in frames:
        image = report.image_for(frame)
        name = frame.image or (image.name if image else None)
        base = {
            "address": _hex(frame.address),
            "image": name,
            "image_offset": frame.address - image.load_address if image else None,
        }
        if frame.symbolicated:
            out.extend(
                {
                    **base,
                    "symbol": location.symbol,
                    "symbol_offset": location.symbol_offset,
                    "file": location.file,
                    "line": location.line,
                    "inlined": location.inlined,
                    "symbolicated": True,
                }
                for location in frame.symbolicated
            )
            continue
        out.append(
            {
                **base,
                "symbol": frame.symbol,
                "symbol_offset": frame.symbol_offset,
                "file": frame.file,
                "line": frame.line,
                "inlined": frame.inlined,
                "symbolicated": False,
            }
        )
    return out


def _image(image: CrashImage) -> dict[str, Any]:
    return {
        "name": image.name,
        "load_address": _hex(image.load_address),
        "end_address": _hex(image.end_address),
        "arch": image.arch,
        "uuid": image.uuid,
        "path": image.path,
        "version": image.version,
    }
