"""Apple's text crash report (``.crash``), also the body of pre-iOS 15 ``.ips`` files.

Spec: ``formats/apple-crash.md`` §2. Layout, top to bottom, every part optional::

    Key: value                      header and exception block; unknown keys kept as written
    Application Specific Information:   multi-line blocks, each ending at a blank line
    Last Exception Backtrace:       frame lines, or one line "(0x… 0x… …)"
    Thread 0 name:  Dispatch queue: com.apple.main-thread
    Thread 0 Crashed:               frame lines "<n> <image> <address> <rest>"
    Thread 0 crashed with ARM Thread State (64-bit):   "reg: 0x…" pairs
    Binary Images:                  "<lo> - <hi> [+]<name> <arch> [(<version>)] <<uuid>> <path>"
    Handler crashed while reporting:    KSCrash text: the crash inside the handler follows

The reader works line by line, so a truncated report keeps everything before the cut.
"""

from __future__ import annotations

import re
from typing import Final

from hawkwatch.errors import FormatError
from hawkwatch.formats._crash_values import arch_from_code_type, decode_text, iso_timestamp
from hawkwatch.model import Parsed, Skipped
from hawkwatch.model.crash import (
    CrashException,
    CrashFrame,
    CrashImage,
    CrashReport,
    CrashThread,
)

FORMAT: Final = "apple-text"

FRAME: Final = re.compile(r"^(\d+)\s+(.+?)\s+(0x[0-9a-fA-F]+)(?:\s+(.*?))?\s*$")
OFFSET_FORM: Final = re.compile(
    r"^(0x[0-9a-fA-F]+)\s*\+\s*(0x[0-9a-fA-F]+|\d+)(?:\s*//\s*(.*)|\s+\((.*)\))?$"
)
SYMBOL_FORM: Final = re.compile(
    r"^(?P<symbol>.+?)(?:\s+\+\s+(?P<offset>\d+|0x[0-9a-fA-F]+))?"
    r"(?:\s+\((?P<file>[^()]+?):(?P<line>\d+)(?::\d+)?\))?$"
)
IMAGE: Final = re.compile(
    r"^\s*(0x[0-9a-fA-F]+)\s*-\s*(0x[0-9a-fA-F]+|\?\?\?)\s+(\+?)(.+?)\s+"
    r"(?:([\w.]+)\s+)?(?:\(([^)]*)\)\s+)?<([0-9A-Fa-f-]{32,36}|\(null\))>\s*(.*?)\s*$"
)
THREAD: Final = re.compile(r"^Thread (\d+)( Crashed)?:(?::\s*Dispatch queue:\s*(.*)|\s*(.*))$")
THREAD_NAME: Final = re.compile(r"^Thread (\d+) name:\s*(.*)$")
THREAD_STATE: Final = re.compile(r"^Thread (\d+) crashed with .*Thread State.*:\s*$")
REGISTER: Final = re.compile(r"\b([a-z][a-z0-9]*):\s*(0x[0-9a-fA-F]+)")
HEADER: Final = re.compile(r"^([A-Za-z][\w /.()-]*?):(?:\s+(.*?))?\s*$")
BARE_ADDRESSES: Final = re.compile(r"^\((0x[0-9a-fA-F]+(?:\s+0x[0-9a-fA-F]+)*)\)\s*$")
UNCAUGHT: Final = re.compile(
    r"Terminating app due to uncaught exception '(?P<name>[^']*)', reason: '(?P<reason>.*)'",
    re.DOTALL,
)
ARCH_NAMES: Final = frozenset(
    {"x86_64", "x86_64h", "i386", "arm64", "arm64e", "arm64_32", "armv6", "armv7", "armv7s",
     "armv7k", "ppc"}
)  # fmt: skip
RECRASH_MARKER: Final = "Handler crashed while reporting:"
# Headers that make a "Key: value" text a crash report (other text files have headers too).
CRASH_KEYS: Final = frozenset(
    {"Incident Identifier", "CrashReporter Key", "Hardware Model", "Process", "Code Type",
     "Date/Time", "OS Version", "Report Version", "Exception Type", "Exception Codes",
     "Crashed Thread", "Triggered by Thread", "Termination Reason"}
)  # fmt: skip


def looks_like_apple_text(text: str) -> bool:
    """True when the text starts like a text crash report (a header, a thread or images)."""
    for line in text.splitlines()[:5]:
        stripped = line.strip()
        if not stripped:
            continue
        return bool(HEADER.match(stripped) and not stripped.startswith("{")) or stripped.startswith(
            ("Thread ", "Binary Images:")
        )
    return False


def parse_apple_crash(data: bytes | str, *, source: str = "<bytes>") -> Parsed[CrashReport]:
    """Parse a text crash report; ``FormatError`` only when it holds nothing recognisable."""
    text = decode_text(data)
    lines = text.splitlines()
    recrash_at = next(
        (number for number, line in enumerate(lines) if line.strip() == RECRASH_MARKER), None
    )
    parser = _Parser(source)
    parser.feed(lines if recrash_at is None else lines[:recrash_at])
    report = parser.finish()
    if recrash_at is not None:
        inner = _Parser(source, first_line=recrash_at + 2)
        inner.feed(lines[recrash_at + 1 :])
        recrash = inner.finish()
        recrash.images = report.images  # the handler crashed in the same process
        report.recrash = recrash
        parser.skipped.extend(inner.skipped)
    if not parser.recognised:
        raise FormatError(source, "not a crash report (no header, thread or binary image)")
    return Parsed(report, parser.skipped)


class _Parser:
    """Line-by-line state machine; ``mode`` says which block the previous lines opened."""

    def __init__(self, source: str, first_line: int = 1) -> None:
        self.source = source
        self.first_line = first_line
        self.report = CrashReport(format=FORMAT)
        self.skipped: list[Skipped] = []
        self.threads: dict[int, CrashThread] = {}
        self.mode = "header"
        self.block_key: str | None = None
        self.block_lines: list[str] = []
        self.thread: CrashThread | None = None
        self.registers: dict[str, int] | None = None
        self.last_key: str | None = None
        self.crashed_index: int | None = None
        self.last_block: str | None = None
        self.recognised = False

    # -- driving ---------------------------------------------------------------------------

    def feed(self, lines: list[str]) -> None:
        for offset, raw in enumerate(lines):
            number = self.first_line + offset
            try:
                self._line(raw.rstrip("\r"), number)
            except ValueError as exc:  # int() of a number thousands of digits long
                if "digits" not in str(exc):
                    raise
                self.skipped.append(Skipped(number, "a number too long to be one"))
        self._end_block()

    def finish(self) -> CrashReport:
        report = self.report
        report.threads = [self.threads[index] for index in sorted(self.threads)]
        if self.crashed_index is not None and not any(t.crashed for t in report.threads):
            thread = self.threads.get(self.crashed_index)
            if thread is not None:
                thread.crashed = True
        info = report.application_specific_info
        if info and report.exception.reason is None:
            match = UNCAUGHT.search(info)
            if match:
                report.exception.name = report.exception.name or match["name"]
                report.exception.reason = match["reason"]
        return report

    def _line(self, line: str, number: int) -> None:
        stripped = line.strip()
        if not stripped:
            self._end_block()
            self.last_key = None
            return
        if self.mode == "block" and not self._starts_section(stripped):
            self.block_lines.append(line.rstrip())
            return
        if self.mode == "images" and self._image(line, number):
            return
        if self.mode in ("thread", "backtrace") and self._frame(stripped, number):
            return
        if self.mode == "registers" and self.registers is not None:
            pairs = REGISTER.findall(stripped)
            if pairs:
                for name, value in pairs:
                    self.registers[name] = _number(value, 16)
                return
        self._end_block()
        self._section_or_header(line, stripped, number)

    def _starts_section(self, stripped: str) -> bool:
        return bool(
            THREAD.match(stripped)
            or THREAD_NAME.match(stripped)
            or stripped.startswith("Binary Images:")
        )

    def _end_block(self) -> None:
        if self.mode == "block" and self.block_key is not None:
            self._store_block(self.block_key, self.block_lines)
        self.mode = "header" if self.mode in ("block", "header") else "between"
        self.block_key = None
        self.block_lines = []
        self.thread = None
        self.registers = None

    # -- sections --------------------------------------------------------------------------

    def _section_or_header(self, line: str, stripped: str, number: int) -> None:
        previous_key, self.last_key = self.last_key, None
        match = THREAD_STATE.match(stripped)
        if match:
            self.recognised = True
            self.registers = self._thread(_number(match[1])).registers
            self.mode = "registers"
            return
        match = THREAD_NAME.match(stripped)
        if match:
            self.recognised = True
            thread = self._thread(_number(match[1]))
            name = match[2].strip()
            if name.startswith("Dispatch queue:"):
                thread.queue = name.removeprefix("Dispatch queue:").strip() or None
            else:
                thread.name = name or None
            return
        match = THREAD.match(stripped)
        if match:
            self.recognised = True
            thread = self._thread(_number(match[1]))
            thread.crashed = thread.crashed or bool(match[2])
            if match[3]:
                thread.queue = match[3].strip()
            elif match[4] and match[4].strip():
                thread.name = match[4].strip()
            self.thread = thread
            self.mode = "thread"
            return
        if stripped.startswith("Binary Images:"):
            self.recognised = True
            self.mode = "images"
            return
        match = HEADER.match(stripped) if line[:1] not in (" ", "\t") else None
        if match:
            key = match[1].strip()
            value = (match[2] or "").strip()
            if value:
                self._header(key, value)
                self.last_key = self.last_block = key
                return
            if key == "Last Exception Backtrace":
                self.recognised = True
                self.mode = "backtrace"
                return
            self.mode = "block"
            self.block_key = self.last_block = key
            self.block_lines = []
            return
        if previous_key is not None:
            previous = self.report.metadata.get(previous_key, "")
            self.report.metadata[previous_key] = f"{previous}\n{line.rstrip()}".lstrip("\n")
            self.last_key = previous_key
            return
        if stripped == "EOF":
            return
        # Free text after a blank line (stack dumps, VM summaries, notes) joins the last block.
        key = self.last_block or "Other"
        previous = self.report.metadata.get(key, "")
        self.report.metadata[key] = f"{previous}\n{line.rstrip()}".lstrip("\n")

    def _thread(self, index: int) -> CrashThread:
        thread = self.threads.get(index)
        if thread is None:
            thread = self.threads[index] = CrashThread(index=index)
        return thread

    def _frame(self, stripped: str, number: int) -> bool:
        if self.mode == "backtrace":
            bare = BARE_ADDRESSES.match(stripped)
            if bare:
                self.report.last_exception_backtrace.extend(
                    CrashFrame(address=_number(token, 16)) for token in bare[1].split()
                )
                return True
        frame = parse_frame_line(stripped)
        if frame is None:
            return False
        if self.mode == "backtrace":
            self.report.last_exception_backtrace.append(frame)
        elif self.thread is not None:
            self.thread.frames.append(frame)
        return True

    def _image(self, line: str, number: int) -> bool:
        image = parse_image_line(line)
        if image is None:
            if line.strip() == "EOF" or HEADER.match(line):
                return False
            self.skipped.append(Skipped(number, "binary image line does not parse"))
            return True
        self.report.images.append(image)
        return True

    # -- values ----------------------------------------------------------------------------

    def _header(self, key: str, value: str) -> None:
        self.recognised = self.recognised or key in CRASH_KEYS
        report = self.report
        exception = report.exception
        if key not in report.metadata:
            report.metadata[key] = value
        if key == "Incident Identifier":
            report.incident_id = value
        elif key == "Date/Time":
            report.timestamp = iso_timestamp(value) or value
        elif key == "Process":
            name, pid = _name_and_pid(value)
            report.process, report.pid = name, pid
        elif key == "Path":
            report.process_path = value
        elif key == "Identifier":
            report.bundle_id = value
        elif key == "Version":
            report.app_version = value
        elif key == "OS Version":
            report.os_version = value
        elif key == "Hardware Model":
            report.hardware_model = value
        elif key == "Code Type":
            report.arch = arch_from_code_type(value)
        elif key == "Exception Type" and exception.type is None and exception.signal is None:
            _exception_type(exception, value)
        elif key == "Exception Codes" and exception.codes is None:
            exception.codes = value
            exception.address = exception.address or _at_address(value)
        elif key == "Exception Subtype" and exception.subtype is None:
            exception.subtype = value
            exception.address = _at_address(value) or exception.address
        elif key in ("Exception Message", "Exception Reason") and exception.reason is None:
            exception.reason = value
        elif key in ("Triggered by Thread", "Crashed Thread") and self.crashed_index is None:
            head = value.split(maxsplit=1)[0] if value.split() else ""
            self.crashed_index = _number(head) if head.isdigit() else None

    def _store_block(self, key: str, lines: list[str]) -> None:
        text = "\n".join(lines).strip("\n")  # indentation is kept, as Apple wrote it
        if key == "Application Specific Information":
            self.recognised = True
            self.report.application_specific_info = text
        if key not in self.report.metadata or not self.report.metadata[key]:
            self.report.metadata[key] = text


def parse_frame_line(line: str) -> CrashFrame | None:
    """One ``<index> <image> <address> <rest>`` line as a frame, or None."""
    match = FRAME.match(line)
    if not match:
        return None
    _index, image, address, rest = match.groups()
    frame = CrashFrame(
        address=_number(address, 16), image=None if image == "???" else image.strip()
    )
    if not rest:
        return frame
    offset_form = OFFSET_FORM.match(rest)
    if offset_form:
        comment = offset_form[3] or offset_form[4]
        if comment:
            _fill_symbol(frame, comment.strip())
        return frame
    _fill_symbol(frame, rest)
    return frame


def _fill_symbol(frame: CrashFrame, text: str) -> None:
    match = SYMBOL_FORM.match(text)
    if not match:
        frame.symbol = text
        return
    frame.symbol = match["symbol"].strip()
    offset = match["offset"]
    if offset:
        frame.symbol_offset = _number(offset, 16) if offset.startswith("0x") else _number(offset)
    if match["file"]:
        frame.file = match["file"].strip()
        frame.line = _number(match["line"])


def parse_image_line(line: str) -> CrashImage | None:
    """One ``Binary Images:`` line, or None when it does not parse."""
    match = IMAGE.match(line)
    if not match:
        return None
    low, high, _plus, name, arch, version, uuid, path = match.groups()
    if version and version.strip() in ARCH_NAMES and arch is None:
        arch, version = version.strip(), None
    elif arch and arch not in ARCH_NAMES and version is None:
        # "<name with spaces> <arch>" where the regex took a name word for the arch
        name, arch = f"{name} {arch}", None
    return CrashImage(
        name=name.strip(),
        load_address=_number(low, 16),
        end_address=None if high == "???" else _number(high, 16),
        arch=arch,
        uuid=None if uuid == "(null)" else uuid,
        path=path or None,
        version=version.strip() if version else None,
    )


def _name_and_pid(value: str) -> tuple[str, int | None]:
    match = re.match(r"^(.*?)\s*\[(\d+)\]\s*$", value)
    if match:
        return match[1], _number(match[2])
    return value, None


def _exception_type(exception: CrashException, value: str) -> None:
    match = re.match(r"^(\S+)\s*\((\S+)\)\s*$", value)
    if match:
        exception.type, exception.signal = match[1], match[2]
    elif value.startswith("SIG"):
        exception.signal = value.split(maxsplit=1)[0]
    else:
        exception.type = value


def _at_address(value: str) -> int | None:
    match = re.search(r"\bat (0x[0-9a-fA-F]+)", value)
    return _number(match[1], 16) if match else None


MAX_DIGITS: Final = 20
"""No field of a crash report needs more digits (a 64-bit address is 16 hex digits)."""


def _number(text: str, base: int = 10) -> int:
    """``int(text, base)``; ``ValueError`` (naming digits) for absurdly long numbers."""
    digits = text[2:] if text[:2].lower() == "0x" else text
    if len(digits) > MAX_DIGITS:
        raise ValueError(f"a number of {len(digits)} digits")
    return int(text, base)
