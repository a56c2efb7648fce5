"""Apple ``.ips`` diagnostic files: one line of JSON metadata, then the report body.

Spec: ``formats/apple-crash.md`` §1 and §3. Bodies by ``bug_type``:

* ``309`` (iOS 15+/macOS 12+ crash): a JSON object; frame address =
  ``usedImages[imageIndex].base + imageOffset``; ``inline: true`` frames share the address of
  the frame after them; ``lastExceptionBacktrace`` and ``asi`` as in the text layout;
* ``109`` (older crash) and others with a text body: a classic text report (``apple_crash``);
* ``298``: JetsamEvent, read by ``formats.jetsam``, not a crash.

The metadata line may be followed on the same line by the body ("concatenated JSON"), the body
may be followed by plain text (``System Profile:``) and may be cut short; all are read.
"""

from __future__ import annotations

from typing import Any, Final

from hawkwatch.errors import FormatError
from hawkwatch.formats._crash_values import (
    arch_from_code_type,
    as_dict,
    as_int,
    as_list,
    as_text,
    basename,
    decode_text,
    iso_timestamp,
    loads_lenient,
    raw_decode,
)
from hawkwatch.formats.apple_crash import parse_apple_crash
from hawkwatch.model import Parsed, Skipped
from hawkwatch.model.crash import (
    CrashException,
    CrashFrame,
    CrashImage,
    CrashReport,
    CrashThread,
)
from hawkwatch.model.text import excerpt

FORMAT: Final = "ips"
CRASH_BUG_TYPES: Final = frozenset({"109", "309"})
JETSAM_BUG_TYPE: Final = "298"


def split_ips(text: str, *, source: str = "<bytes>") -> tuple[dict[str, Any], str]:
    """The metadata object and the text of the body that follows it."""
    start = len(text) - len(text.lstrip())
    try:
        header, end = raw_decode(text, start)
    except ValueError as exc:
        raise FormatError(source, f"no .ips metadata line ({exc})") from exc
    if not isinstance(header, dict):
        raise FormatError(source, "the .ips metadata line is not a JSON object")
    return header, text[end:].lstrip()


def parse_ips(data: bytes | str, *, source: str = "<bytes>") -> Parsed[CrashReport]:
    """Parse a crash ``.ips`` (JSON or text body); ``FormatError`` when it is not one."""
    text = decode_text(data)
    header, body_text = split_ips(text, source=source)
    bug_type = str(header.get("bug_type", ""))
    if bug_type == JETSAM_BUG_TYPE:
        raise FormatError(
            source, "a JetsamEvent (bug_type 298), not a crash; use 'hawkwatch jetsam'"
        )
    if not body_text:
        raise FormatError(source, "the .ips file has metadata but no report body")
    if not body_text.startswith("{"):
        parsed = parse_apple_crash(body_text, source=source)
        report = parsed.value
        report.format = FORMAT
        _apply_header(report, header)
        return Parsed(report, parsed.skipped)
    try:
        body, truncated = loads_lenient(body_text)
    except ValueError as exc:
        raise FormatError(source, f"the .ips body is not JSON ({exc})") from exc
    if not isinstance(body, dict):
        raise FormatError(source, "the .ips body is not a JSON object")
    if bug_type not in CRASH_BUG_TYPES and "threads" not in body:
        raise FormatError(source, f"bug_type {excerpt(bug_type or '?')} is not a crash report")
    skipped: list[Skipped] = []
    if truncated:
        skipped.append(Skipped(0, "report body is truncated; read up to the last complete value"))
    report = _report(body, skipped)
    _apply_header(report, header)
    return Parsed(report, skipped)


def _apply_header(report: CrashReport, header: dict[str, Any]) -> None:
    for key, value in header.items():
        if isinstance(value, str | int | float | bool):
            report.metadata.setdefault(f"ips.{key}", str(value))
    report.incident_id = report.incident_id or as_text(header.get("incident_id"))
    stamp = as_text(header.get("timestamp"))
    if stamp and report.timestamp is None:
        report.timestamp = iso_timestamp(stamp) or stamp
    report.os_version = report.os_version or as_text(header.get("os_version"))
    report.bundle_id = report.bundle_id or as_text(header.get("bundleID"))
    report.app_version = report.app_version or as_text(header.get("app_version"))
    name = as_text(header.get("app_name")) or as_text(header.get("name"))
    report.process = report.process or (name.strip() if name else None)


def _report(body: dict[str, Any], skipped: list[Skipped]) -> CrashReport:
    report = CrashReport(format=FORMAT)
    for key, value in body.items():
        if isinstance(value, str | int | float | bool):
            report.metadata[key] = str(value)
    report.incident_id = as_text(body.get("incident"))
    capture = as_text(body.get("captureTime"))
    report.timestamp = (iso_timestamp(capture) or capture) if capture else None
    report.process = as_text(body.get("procName"))
    report.pid = as_int(body.get("pid"))
    report.process_path = as_text(body.get("procPath"))
    bundle = as_dict(body.get("bundleInfo"))
    report.bundle_id = as_text(bundle.get("CFBundleIdentifier"))
    short, build = (
        as_text(bundle.get("CFBundleShortVersionString")),
        as_text(bundle.get("CFBundleVersion")),
    )
    report.app_version = f"{short} ({build})" if short and build else short or build
    os_info = as_dict(body.get("osVersion"))
    train, os_build = as_text(os_info.get("train")), as_text(os_info.get("build"))
    if train:
        report.os_version = f"{train} ({os_build})" if os_build else train
    report.hardware_model = as_text(body.get("modelCode"))
    cpu = as_text(body.get("cpuType"))
    report.arch = arch_from_code_type(cpu) if cpu else None
    report.images, index_map = _images(as_list(body.get("usedImages")), skipped)
    report.exception = _exception(body)
    termination = _termination(as_dict(body.get("termination")))
    if termination:
        report.metadata["Termination Reason"] = termination
    report.application_specific_info = _asi(body.get("asi"), body.get("asiBacktraces"))
    lost = sum(
        1
        for raw in as_list(body.get("threads"))
        for frame in as_list(as_dict(raw).get("frames"))
        if as_int(as_dict(frame).get("imageIndex")) not in index_map
    )
    if lost:
        skipped.append(Skipped(0, f"{lost} frames dropped: their image is not in usedImages"))
    faulting = as_int(body.get("faultingThread"))
    for position, raw in enumerate(as_list(body.get("threads"))):
        if not isinstance(raw, dict):
            skipped.append(Skipped(position, "thread is not a JSON object"))
            continue
        report.threads.append(_thread(position, raw, faulting, report.images, index_map))
    report.last_exception_backtrace = _frames(
        as_list(body.get("lastExceptionBacktrace")), report.images, index_map
    )
    legacy = as_dict(as_dict(body.get("legacyInfo")).get("threadTriggered"))
    crashed = report.crashed_thread
    if crashed is not None:
        crashed.queue = crashed.queue or as_text(legacy.get("queue"))
        crashed.name = crashed.name or as_text(legacy.get("name"))
    return report


def _images(entries: list[Any], skipped: list[Skipped]) -> tuple[list[CrashImage], dict[int, int]]:
    images: list[CrashImage] = []
    index_map: dict[int, int] = {}
    for index, entry in enumerate(entries):
        base = as_int(entry.get("base")) if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or base is None:
            skipped.append(Skipped(index, "usedImages entry without a base address"))
            continue
        size = as_int(entry.get("size"))
        path = as_text(entry.get("path"))
        name = as_text(entry.get("name")) or (basename(path) if path else "???")
        uuid = as_text(entry.get("uuid"))
        if uuid and not uuid.strip("0-"):
            uuid = None  # the "A" (absolute) pseudo image carries an all-zero UUID
        index_map[index] = len(images)
        images.append(
            CrashImage(
                name=name,
                load_address=base,
                end_address=None if size is None else base + max(size - 1, 0),
                arch=as_text(entry.get("arch")),
                uuid=uuid,
                path=path,
                version=as_text(entry.get("CFBundleShortVersionString")),
            )
        )
    return images, index_map


def _exception(body: dict[str, Any]) -> CrashException:
    raw = as_dict(body.get("exception"))
    subtype = as_text(raw.get("subtype"))
    address = None
    if subtype and " at 0x" in subtype:
        address = as_int(subtype.rsplit(" at ", 1)[1].split()[0])
    return CrashException(
        type=as_text(raw.get("type")),
        signal=as_text(raw.get("signal")),
        codes=as_text(raw.get("codes")),
        subtype=subtype,
        reason=as_text(raw.get("message")),
        address=address,
    )


def _termination(raw: dict[str, Any]) -> str | None:
    if not raw:
        return None
    parts = []
    namespace, code = as_text(raw.get("namespace")), raw.get("code")
    if namespace:
        parts.append(f"Namespace {namespace}")
    if isinstance(code, int):
        parts.append(f"Code {code:#x}" if code > 255 else f"Code {code}")
    text = ", ".join(parts)
    indicator = as_text(raw.get("indicator"))
    if indicator:
        text = f"{text} {indicator}".strip()
    details = [item for item in as_list(raw.get("details")) if isinstance(item, str)]
    reasons = [item for item in as_list(raw.get("reasons")) if isinstance(item, str)]
    extra = "\n".join(details + reasons)
    return f"{text}\n{extra}".strip() if extra else text or None


def _asi(raw: object, backtraces: object) -> str | None:
    lines: list[str] = []
    for messages in as_dict(raw).values():
        if isinstance(messages, list):
            lines.extend(item for item in messages if isinstance(item, str))
        elif isinstance(messages, str):
            lines.append(messages)
    lines.extend(item for item in as_list(backtraces) if isinstance(item, str))
    return "\n".join(lines) if lines else None


def _thread(
    position: int,
    raw: dict[str, Any],
    faulting: int | None,
    images: list[CrashImage],
    index_map: dict[int, int],
) -> CrashThread:
    return CrashThread(
        index=position,
        name=as_text(raw.get("name")),
        queue=as_text(raw.get("queue")),
        crashed=raw.get("triggered") is True or position == faulting,
        frames=_frames(as_list(raw.get("frames")), images, index_map),
        registers=_registers(as_dict(raw.get("threadState"))),
    )


def _frames(
    entries: list[Any], images: list[CrashImage], index_map: dict[int, int]
) -> list[CrashFrame]:
    frames: list[CrashFrame] = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        offset = as_int(entry.get("imageOffset"))
        raw_index = as_int(entry.get("imageIndex"))
        index = index_map.get(raw_index) if raw_index is not None else None
        if offset is None or index is None:
            continue  # a frame cut by truncation, or pointing at an image that is gone
        image = images[index]
        source_line = as_int(entry.get("sourceLine"))
        frames.append(
            CrashFrame(
                address=image.load_address + offset,
                image=None if image.name == "???" else image.name,
                image_index=index,
                symbol=as_text(entry.get("symbol")),
                symbol_offset=as_int(entry.get("symbolLocation")),
                file=as_text(entry.get("sourceFile")),
                line=source_line,
                inlined=entry.get("inline") is True,
            )
        )
    return frames


def _registers(state: dict[str, Any]) -> dict[str, int]:
    registers: dict[str, int] = {}
    for name, value in state.items():
        if name == "x" and isinstance(value, list):
            for number, item in enumerate(value):
                register = as_int(as_dict(item).get("value"))
                if register is not None:
                    registers[f"x{number}"] = register
            continue
        register = as_int(as_dict(value).get("value")) if isinstance(value, dict) else None
        if register is not None:
            registers[name] = register
    return registers
