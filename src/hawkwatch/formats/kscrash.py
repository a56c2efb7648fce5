"""KSCrash / SentryCrash JSON crash reports.

Spec: ``formats/apple-crash.md`` §5. Top-level keys in write order: ``report`` {version, id,
process_name, timestamp, type}, ``binary_images[]`` {image_addr, image_vmaddr, image_size, name
(full path), uuid, cpu_type, cpu_subtype, crash_info_message*}, ``process``, ``system``, ``crash``
{error, threads[] {index, name, dispatch_queue, crashed, backtrace{contents[], skipped},
registers{basic}}, diagnosis}, ``user``.

Recrash (a crash inside the crash handler): the file carries ``recrash_report``. In KSCrash 2.0
files the outer report is the original crash and ``recrash_report`` the handler's crash; in newer
files the outer report is ``minimal`` (only ``crash.error`` and ``crash.crashed_thread``) and
``recrash_report`` holds the original. Either way the result is the original crash with the
handler's crash in ``recrash``. ``recrash_report`` may itself be cut short; it is read leniently.
"""

from __future__ import annotations

import json
from typing import Any, Final

from hawkwatch.errors import FormatError
from hawkwatch.formats._crash_values import (
    arch_from_cpu,
    as_dict,
    as_int,
    as_list,
    as_text,
    basename,
    decode_text,
    iso_from_epoch,
    iso_timestamp,
    loads_lenient,
)
from hawkwatch.model import Parsed, Skipped
from hawkwatch.model.crash import (
    CrashException,
    CrashFrame,
    CrashImage,
    CrashReport,
    CrashThread,
)

FORMAT: Final = "kscrash"
REDACTED: Final = frozenset({"<redacted>", "<unknown>", "???"})
# Darwin signal numbers, for reports that give only the number.
SIGNALS: Final = {
    1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT",
    7: "SIGEMT", 8: "SIGFPE", 9: "SIGKILL", 10: "SIGBUS", 11: "SIGSEGV", 12: "SIGSYS",
    13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM",
}  # fmt: skip
# error.type values that are not a Mach exception or a signal: they name the crash themselves.
KIND_AS_TYPE: Final = frozenset({"deadlock", "memory_termination", "hang"})


def looks_like_kscrash(document: object) -> bool:
    """A JSON object shaped like a KSCrash report (§1 of the spec)."""
    if not isinstance(document, dict):
        return False
    if "recrash_report" in document:
        return True
    if isinstance(document.get("report"), dict) and any(
        key in document for key in ("crash", "binary_images", "system")
    ):
        return True
    # a cut file may end before ``report`` (keys are often written in sorted order)
    crash = document.get("crash")
    images = document.get("binary_images")
    return (isinstance(crash, dict) and ("error" in crash or "threads" in crash)) or (
        isinstance(images, list)
        and bool(images)
        and isinstance(images[0], dict)
        and "image_addr" in images[0]
    )


def parse_kscrash(data: bytes | str, *, source: str = "<bytes>") -> Parsed[CrashReport]:
    """Parse a KSCrash JSON report; ``FormatError`` when it is not one."""
    text = decode_text(data)
    try:
        document, truncated = loads_lenient(text)
    except ValueError as exc:
        raise FormatError(source, f"not JSON ({exc})") from exc
    if not looks_like_kscrash(document):
        raise FormatError(source, "not a KSCrash report (no 'report' or 'recrash_report')")
    skipped: list[Skipped] = []
    if truncated:
        skipped.append(Skipped(0, "report is truncated; read up to the last complete value"))
    return Parsed(report_from_document(document, skipped), skipped)


def report_from_document(document: dict[str, Any], skipped: list[Skipped]) -> CrashReport:
    """The crash model of one decoded KSCrash document (recrash included)."""
    inner = _recrash_document(document.get("recrash_report"), skipped)
    outer_is_minimal = as_dict(document.get("report")).get("type") == "minimal" or not any(
        key in document for key in ("binary_images", "system")
    )
    if inner is None:
        return _report(document, skipped)
    if outer_is_minimal:
        original = _report(inner, skipped)
        if "crash" in document:
            handler = _report(document, skipped)
            handler.images = handler.images or original.images
            original.recrash = handler
        return original
    original = _report(document, skipped)
    handler = _report(inner, skipped)
    handler.images = handler.images or original.images
    original.recrash = handler
    return original


def _recrash_document(raw: object, skipped: list[Skipped]) -> dict[str, Any] | None:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value, truncated = loads_lenient(raw)
        except ValueError:
            skipped.append(Skipped(0, "recrash_report is not JSON"))
            return None
        if truncated:
            skipped.append(Skipped(0, "recrash_report is truncated"))
        return value if isinstance(value, dict) else None
    return None


def _report(document: dict[str, Any], skipped: list[Skipped]) -> CrashReport:
    header = as_dict(document.get("report"))
    system = as_dict(document.get("system")) or as_dict(document.get("system_atcrash"))
    crash = as_dict(document.get("crash"))
    report = CrashReport(format=FORMAT)
    report.incident_id = as_text(header.get("id"))
    report.timestamp = _timestamp(header.get("timestamp"))
    report.process = as_text(header.get("process_name")) or as_text(system.get("process_name"))
    report.pid = as_int(system.get("process_id"))
    report.process_path = as_text(system.get("CFBundleExecutablePath"))
    report.bundle_id = as_text(system.get("CFBundleIdentifier"))
    short = as_text(system.get("CFBundleShortVersionString"))
    build = as_text(system.get("CFBundleVersion"))
    report.app_version = f"{short} ({build})" if short and build else short or build
    report.os_version = _os_version(system)
    report.hardware_model = as_text(system.get("machine"))
    report.arch = as_text(system.get("cpu_arch"))
    for key in ("type", "version"):
        if key in header:
            report.metadata[f"report.{key}"] = _scalar(header[key])
    for key, value in system.items():
        if isinstance(value, str | int | float | bool):
            report.metadata[f"system.{key}"] = str(value)
    report.images, messages = _images(document.get("binary_images"), skipped)
    error = as_dict(crash.get("error"))
    report.exception = _exception(error)
    if as_text(error.get("type")):
        report.metadata["crash.error.type"] = str(error["type"])
    diagnosis = as_text(crash.get("diagnosis"))
    if diagnosis:
        report.metadata["CrashDoctor Diagnosis"] = diagnosis
    info = _uncaught_text(report.exception) + messages
    report.application_specific_info = "\n".join(info) if info else None
    threads = crash.get("threads")
    for position, raw in enumerate(as_list(threads)):
        if not isinstance(raw, dict):
            skipped.append(Skipped(position, "crash.threads entry is not a JSON object"))
            continue
        report.threads.append(_thread(position, raw))
    crashed = as_dict(crash.get("crashed_thread"))
    if crashed and not report.threads:
        thread = _thread(0, crashed)
        thread.crashed = True
        report.threads.append(thread)
    return report


def _timestamp(value: object) -> str | None:
    if isinstance(value, str):
        return iso_timestamp(value.replace("Z", " +0000")) or value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return iso_from_epoch(float(value))
    return None


def _os_version(system: dict[str, Any]) -> str | None:
    name, version = as_text(system.get("system_name")), as_text(system.get("system_version"))
    build = as_text(system.get("os_version"))
    if not (name or version):
        return None
    text = " ".join(part for part in (name, version) if part)
    return f"{text} ({build})" if build else text


def _scalar(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _images(raw: object, skipped: list[Skipped]) -> tuple[list[CrashImage], list[str]]:
    images: list[CrashImage] = []
    messages: list[str] = []
    for index, entry in enumerate(as_list(raw)):
        address = as_int(entry.get("image_addr")) if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or address is None:
            skipped.append(Skipped(index, "binary_images entry is not an image object"))
            continue
        path = as_text(entry.get("name"))
        size = as_int(entry.get("image_size"))
        numbers = [as_int(entry.get(key)) for key in ("major_version", "minor_version")]
        numbers.append(as_int(entry.get("revision_version")))
        version = ".".join(str(n) for n in numbers) if all(n is not None for n in numbers) else None
        images.append(
            CrashImage(
                name=basename(path) if path else "???",
                load_address=address,
                end_address=address + size - 1 if size else None,
                arch=arch_from_cpu(entry.get("cpu_type"), entry.get("cpu_subtype")),
                uuid=as_text(entry.get("uuid")),
                path=path,
                version=version,
                text_vmaddr=as_int(entry.get("image_vmaddr")),
            )
        )
        for key in ("crash_info_message", "crash_info_message2"):
            message = as_text(entry.get(key))
            if message:
                messages.append(message.strip())
    return images, messages


def _exception(error: dict[str, Any]) -> CrashException:
    mach, signal = as_dict(error.get("mach")), as_dict(error.get("signal"))
    kind = as_text(error.get("type"))
    ns = as_dict(error.get("nsexception"))
    name = None
    if kind == "nsexception" or ns:
        name = as_text(ns.get("name"))
    elif kind == "cpp_exception":
        name = as_text(as_dict(error.get("cpp_exception")).get("name"))
    elif kind == "user":
        name = as_text(as_dict(error.get("user_reported")).get("name"))
    code, subcode = as_int(mach.get("code")), as_int(mach.get("subcode"))
    codes = None
    if code is not None:
        codes = f"{code:#018x}, {(subcode or 0):#018x}"
    elif as_text(signal.get("code_name")):
        codes = as_text(signal.get("code_name"))
    signal_number = as_int(signal.get("signal"))
    mach_type = as_text(mach.get("exception_name")) or _numbered("EXC", mach.get("exception"))
    return CrashException(
        type=mach_type or (kind if kind in KIND_AS_TYPE else None),
        signal=as_text(signal.get("name"))
        or SIGNALS.get(signal_number or 0)
        or _numbered("SIG", signal_number),
        codes=codes,
        subtype=as_text(mach.get("code_name")),
        reason=as_text(error.get("reason")) or as_text(ns.get("reason")),
        name=name,
        address=as_int(error.get("address")),
    )


def _numbered(prefix: str, value: object) -> str | None:
    number = as_int(value)
    return f"{prefix} {number}" if number else None


def _uncaught_text(exception: CrashException) -> list[str]:
    if exception.name and exception.reason:
        return [
            f"*** Terminating app due to uncaught exception '{exception.name}', "
            f"reason: '{exception.reason}'"
        ]
    return []


def _thread(position: int, raw: dict[str, Any]) -> CrashThread:
    backtrace = as_dict(raw.get("backtrace"))
    frames: list[CrashFrame] = []
    for entry in as_list(backtrace.get("contents")):
        address = as_int(entry.get("instruction_addr")) if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or address is None:
            continue
        symbol = as_text(entry.get("symbol_name"))
        symbol_address = as_int(entry.get("symbol_addr"))
        if symbol in REDACTED:
            symbol = None
        frames.append(
            CrashFrame(
                address=address,
                image=as_text(entry.get("object_name")),
                symbol=symbol,
                symbol_offset=address - symbol_address
                if symbol and symbol_address is not None and symbol_address <= address
                else None,
            )
        )
    registers = {
        name: value
        for name, value in as_dict(as_dict(raw.get("registers")).get("basic")).items()
        if isinstance(value, int) and not isinstance(value, bool)
    }
    index = as_int(raw.get("index"))
    return CrashThread(
        index=position if index is None else index,
        name=as_text(raw.get("name")),
        queue=as_text(raw.get("dispatch_queue")),
        crashed=raw.get("crashed") is True,
        frames=frames,
        registers=registers,
    )
