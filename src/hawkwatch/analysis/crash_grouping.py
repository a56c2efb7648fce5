"""Crash grouping: one fingerprint per crash, so the same bug in many reports is one group.

Rules (``formats/apple-crash.md`` §9, after Sentry's "newstyle" strategy):

* the crashed thread's frames, innermost first, inlined functions expanded;
* each frame keyed by ``image name + trimmed function`` — never addresses, offsets or lines;
  a frame with no function name contributes its image name only;
* identical consecutive keys collapse (recursion counts once);
* the top ``frames`` (default 5) **in-app** frames: images of the app's bundle — the main
  executable and every image whose path lies inside the ``.app`` bundle — plus extra image-name
  globs, minus excluded globs (``libswift*`` copied into the bundle is system code);
* fallbacks, in order: the top system frames with a function name, then the exception type with
  its reason normalised (numbers and addresses removed);
* the exception type (Mach type or signal, plus the ObjC/C++ exception class) always counts.

Pure: no I/O, only ``model``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from typing import Final, Literal

from hawkwatch.model.crash import CrashFrame, CrashImage, CrashReport

Variant = Literal["app", "system", "exception"]

UNKNOWN_FUNCTIONS: Final = frozenset({"<redacted>", "<unknown>", "???", "<deduplicated_symbol>"})
_TEMPLATE: Final = re.compile(r"<[^<>]*>")
_RUST_HASH: Final = re.compile(r"::h[0-9a-f]{16}$")
_CLONE: Final = re.compile(r"\s*\[clone [^\]]*\]")
_NUMBERS: Final = re.compile(r"0x[0-9a-fA-F]+|\b\d+\b")


@dataclass(frozen=True, slots=True)
class GroupingConfig:
    """What counts as the app's own code, and how much of the stack decides a group.

    ``frames``: in-app frames that form the fingerprint; raise it to split groups finer.
    ``in_app_include``: image-name globs that are in-app although outside the bundle (a
    framework you build and ship elsewhere). ``in_app_exclude``: image-name globs inside the
    bundle that are not your code (Swift runtime copies, vendored SDKs).
    """

    frames: int = 5
    in_app_include: tuple[str, ...] = ()
    in_app_exclude: tuple[str, ...] = ("libswift*",)


DEFAULT_GROUPING: Final = GroupingConfig()


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """The group key of one crash and what it was computed from."""

    hash: str
    variant: Variant
    components: tuple[str, ...]
    title: str


@dataclass(slots=True)
class CrashGroup:
    """Crashes that share a fingerprint; ``sources`` in input order, the first one represents."""

    fingerprint: Fingerprint
    sources: list[str] = field(default_factory=list)
    reports: list[CrashReport] = field(default_factory=list)
    first_seen: str | None = None
    last_seen: str | None = None

    @property
    def count(self) -> int:
        return len(self.reports)

    @property
    def representative(self) -> str:
        return self.sources[0]


def app_bundle(report: CrashReport) -> str | None:
    """The ``….app`` folder that holds the main executable, when the path shows one."""
    path = report.process_path or ""
    marker = path.find(".app/")
    return path[: marker + len(".app")] if marker >= 0 else None


def in_app_images(report: CrashReport, config: GroupingConfig = DEFAULT_GROUPING) -> set[int]:
    """Indices into ``report.images`` of the app's own images."""
    bundle = app_bundle(report)
    bundle = _device_path(bundle) if bundle else None
    main_path = _device_path(report.process_path) if report.process_path else None
    found = _main_images(report, main_path)
    for index, image in enumerate(report.images):
        if index in found or _matches(image.name, config.in_app_include):
            found.add(index)
            continue
        if _matches(image.name, config.in_app_exclude):
            continue
        if image.in_app is not None:  # the reader knew (Python crashes)
            if image.in_app:
                found.add(index)
            continue
        path = _device_path(image.path or "")
        if bundle is not None and path.startswith(bundle + "/"):
            found.add(index)
        elif main_path is None and ".app/" in path and not path.startswith("/System/"):
            found.add(index)  # no main path known (MTHawkeye): any app bundle's image
    return found


def _main_images(report: CrashReport, main_path: str | None) -> set[int]:
    """The main executable: by path, else (scrubbed or moved paths) by file or process name."""
    if main_path is not None:
        by_path = {
            index
            for index, image in enumerate(report.images)
            if image.path and _device_path(image.path) == main_path
        }
        if by_path:
            return by_path
    name = main_path.rsplit("/", 1)[-1] if main_path else report.process
    if not name:
        return set()
    return {
        index
        for index, image in enumerate(report.images)
        if image.name == name or (image.path or "").rsplit("/", 1)[-1] == name
    }


def _device_path(path: str) -> str:
    """``/private/var/…`` and ``/var/…`` are the same place on a device."""
    return path.removeprefix("/private") if path.startswith("/private/") else path


def fingerprint(report: CrashReport, config: GroupingConfig = DEFAULT_GROUPING) -> Fingerprint:
    """The fingerprint of one crash (see the module docstring for the rules)."""
    exception = _exception_key(report)
    thread = report.crashed_thread or (report.threads[0] if report.threads else None)
    frames = thread.frames if thread is not None else []
    if not frames and report.last_exception_backtrace:
        frames = report.last_exception_backtrace
    in_app = in_app_images(report, config)
    app_keys = _collapse(
        _key(module, function)
        for frame in frames
        if _image_index(report, frame) in in_app
        for module, function in _frame_keys(report, frame)
    )[: config.frames]
    variant: Variant
    if app_keys:
        variant, keys = "app", app_keys
    else:
        system_keys = _collapse(
            _key(module, function)
            for frame in frames
            for module, function in _frame_keys(report, frame)
            if function is not None
        )[: config.frames]
        if system_keys:
            variant, keys = "system", system_keys
        else:
            reason = _NUMBERS.sub("N", report.exception.reason or "").strip()
            variant, keys = "exception", [reason] if reason else []
    components = (exception, *keys)
    digest = hashlib.sha256("\n".join((variant, *components)).encode()).hexdigest()[:16]
    top = keys[0] if keys else ""
    title = f"{exception} in {top}" if variant != "exception" and top else exception
    if variant == "exception" and keys:
        title = f"{exception}: {keys[0]}"
    return Fingerprint(digest, variant, components, title)


def group_crashes(
    items: Iterable[tuple[str, CrashReport]], config: GroupingConfig = DEFAULT_GROUPING
) -> list[CrashGroup]:
    """Group ``(source, report)`` pairs; biggest group first, then the most recent."""
    groups: dict[str, CrashGroup] = {}
    for source, report in items:
        key = fingerprint(report, config)
        group = groups.get(key.hash)
        if group is None:
            group = groups[key.hash] = CrashGroup(key)
        group.sources.append(source)
        group.reports.append(report)
        when = _instant(report.timestamp)
        if when is not None:
            if group.first_seen is None or when < (_instant(group.first_seen) or when):
                group.first_seen = report.timestamp
            if group.last_seen is None or when > (_instant(group.last_seen) or when):
                group.last_seen = report.timestamp
    return sorted(
        groups.values(),
        key=lambda g: (-g.count, -(epoch(g.last_seen) or 0.0), g.fingerprint.hash),
    )


def trim_function(name: str) -> str:
    """A function name without arguments, template arguments, return type or clone suffix."""
    text = name.strip()
    if text.startswith(("-[", "+[")):
        return text.split("]", 1)[0] + "]" if "]" in text else text
    text = _CLONE.sub("", text)
    text = _RUST_HASH.sub("", text)
    text = text.split("@", 1)[0] if "@GLIBC" in text else text
    previous = None
    while previous != text:  # innermost template arguments first, until none is left
        previous = text
        text = _TEMPLATE.sub("\0", text)
    text = text.replace("\0", "<T>")
    text = re.sub(r"\s+(const|volatile|&&?|noexcept)\s*$", "", text)
    text = _strip_arguments(text)
    if "::" in text and " in " not in text:
        depth, cut = 0, -1
        for position, char in enumerate(text):
            if char in "<(":
                depth += 1
            elif char in ">)":
                depth -= 1
            elif char == " " and depth == 0:
                cut = position
        if cut >= 0:
            text = text[cut + 1 :]
    return text.strip() or name.strip()


def _strip_arguments(text: str) -> str:
    if not text.endswith(")"):
        return text
    depth = 0
    for position in range(len(text) - 1, -1, -1):
        char = text[position]
        if char == ")":
            depth += 1
        elif char == "(":
            depth -= 1
            if depth == 0:
                head = text[:position].rstrip()
                # keep "operator()" and "(anonymous namespace)" intact
                if not head or head.endswith(("operator", "::")):
                    return text
                return head
    return text


def _exception_key(report: CrashReport) -> str:
    exception = report.exception
    kind = exception.type or exception.signal or "unknown"
    if exception.type and exception.signal:
        kind = f"{exception.type} ({exception.signal})"
    return f"{kind} {exception.name}" if exception.name else kind


def _frame_keys(report: CrashReport, frame: CrashFrame) -> list[tuple[str, str | None]]:
    """``(module, trimmed function)`` per function at the frame, inlined ones first."""
    image = report.image_for(frame)
    # the file name, not the frame's label: old macOS text reports label frames by bundle id
    from_path = _file_name(image.path) if image is not None and image.path else None
    module = from_path or frame.image or (image.name if image is not None else "???")
    names: list[str | None] = [location.symbol for location in frame.symbolicated]
    names = names or [frame.symbol]
    keys: list[tuple[str, str | None]] = [
        (module, trim_function(name)) for name in names if name and name not in UNKNOWN_FUNCTIONS
    ]
    return keys or [(module, None)]


def _file_name(path: str) -> str | None:
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return name or None


def _key(module: str, function: str | None) -> str:
    return f"{module} {function}" if function else module


def _image_index(report: CrashReport, frame: CrashFrame) -> int | None:
    if frame.image_index is not None and 0 <= frame.image_index < len(report.images):
        return frame.image_index
    image: CrashImage | None = report.image_for(frame)
    if image is None and frame.image:
        image = next((i for i in report.images if i.name == frame.image), None)
    if image is None:
        return None
    return next(
        (index for index, candidate in enumerate(report.images) if candidate is image), None
    )


def _collapse(keys: Iterable[str]) -> list[str]:
    collapsed: list[str] = []
    for key in keys:
        if not collapsed or collapsed[-1] != key:
            collapsed.append(key)
    return collapsed


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatchcase(name, pattern) for pattern in patterns)


def _instant(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def epoch(value: str | None) -> float | None:
    """Unix seconds of a crash report's ISO timestamp (naive ones are UTC); None if unreadable."""
    instant = _instant(value)
    return instant.timestamp() if instant is not None else None
