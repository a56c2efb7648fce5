"""MTHawkeye address stacks (ANR samples, CPU high-load trees) as a crash model to symbolicate.

Spec: ``formats/hawkeye.md`` §4 (``anr``, ``cpu-highload-stackframe``), §4.1 (ANR records split
into parts), §5.1 (``dyld-images``), §5.3 (``cpu-highload-stackframe-ext``).

* ``anr`` ``<t>_<i>``: ``{"duration","startFrom","inBackground","stacks":[{"time","stackframes":
  "0x..,0x.." (innermost first),"titleframe","capturedCount","threadCount"}]}``; parts of one
  stall share ``<t>`` and are merged as MTHawkeye does. Each sample becomes one thread.
* ``cpu-highload-stackframe``: a JSON array of root nodes ``{"frame","count","proportion",
  "children"}`` (roots are the outermost frames); each root-to-leaf path becomes one thread,
  innermost first, at most ``MAX_TREE_PATHS`` per episode.

Images come from the session's ``dyld-images``: load address ``base_addr``, ``__TEXT`` vmaddr
``base_addr − addr_slide``. An address belongs to the image with the largest load address at or
below it (MTHawkeye records no image sizes).
"""

from __future__ import annotations

import json
from bisect import bisect_right
from pathlib import Path
from typing import Any, Final

from hawkwatch.errors import FormatError, NotASessionError, StoreError
from hawkwatch.formats._crash_values import as_dict, as_int, as_list, basename
from hawkwatch.formats.hawkeye import read_dyld_images
from hawkwatch.model import ImageList, Parsed, Skipped, collections
from hawkwatch.model.crash import CrashFrame, CrashImage, CrashReport, CrashThread
from hawkwatch.store import Session
from hawkwatch.store.files import read_side_file

FORMAT: Final = "hawkeye"
CPU_EXT_NAME: Final = "cpu-highload-stackframe-ext"
CPU_EXT_DELIMITER: Final = "\u00b7"
MAX_TREE_PATHS: Final = 200


def read_session_stacks(folder: str | Path) -> Parsed[CrashReport]:
    """The ANR and CPU high-load stacks of one MTHawkeye session folder."""
    try:
        session = Session.open(folder)
    except NotASessionError as exc:
        raise FormatError(str(folder), str(exc).split(": ", 1)[-1]) from exc
    read = session.records()
    skipped: list[Skipped] = list(read.skipped)
    anr: list[tuple[str, str]] = []
    cpu: list[tuple[str, str]] = []
    for record in read.records:
        if record.collection == collections.ANR:
            anr.append((record.key, record.value))
        elif record.collection == collections.CPU_HIGHLOAD_STACKFRAME:
            cpu.append((record.key, record.value))
    cpu.extend(_ext_records(session.path / CPU_EXT_NAME))
    dyld = read_dyld_images(session.path)
    if dyld is not None:
        skipped.extend(dyld.skipped)
    report = stacks_report(anr, cpu, dyld.value if dyld else None, skipped)
    if not report.threads:
        raise FormatError(str(folder), "the session has no anr or cpu-highload-stackframe stacks")
    report.metadata["session"] = session.name
    return Parsed(report, skipped)


def crash_images(images: ImageList) -> list[CrashImage]:
    """``dyld-images`` entries as crash-model images (``__TEXT`` vmaddr = base − slide)."""
    return [
        CrashImage(
            name=basename(image.name),
            load_address=image.base_address,
            uuid=image.debug_id or None,
            path=image.name,
            text_vmaddr=image.base_address - image.slide,
        )
        for image in images.images
    ]


def stacks_report(
    anr: list[tuple[str, str]],
    cpu: list[tuple[str, str]],
    images: ImageList | None,
    skipped: list[Skipped],
) -> CrashReport:
    """Build the report from raw ``(key, value)`` records and the session's image list."""
    report = CrashReport(format=FORMAT)
    if images is not None:
        report.process = images.app_name
        report.os_version = images.os_version
        report.arch = images.arch.split()[0] if images.arch else None
        report.metadata["os_build"] = images.os_build or ""
        report.images = crash_images(images)
    locate = _Locator(report.images)
    for stall, value in _merge_anr(anr, skipped):
        start = value.get("startFrom")
        for raw_sample in as_list(value.get("stacks")):
            sample = as_dict(raw_sample)
            addresses = _addresses(sample.get("stackframes"))
            if not addresses:
                continue
            when = sample.get("time")
            label = f"anr {stall}"
            if isinstance(when, int | float) and isinstance(start, int | float):
                label += f" +{when - start:.2f}s"
            report.threads.append(
                CrashThread(
                    index=len(report.threads),
                    name=label,
                    frames=[locate.frame(address) for address in addresses],
                )
            )
    for key, text in cpu:
        try:
            roots = json.loads(text)
        except ValueError:
            skipped.append(Skipped(0, f"cpu-highload-stackframe {key}: not JSON"))
            continue
        for number, (path, count) in enumerate(_tree_paths(roots)):
            report.threads.append(
                CrashThread(
                    index=len(report.threads),
                    name=f"cpu-highload {key} path {number} ({count} samples)",
                    frames=[locate.frame(address) for address in reversed(path)],
                )
            )
    return report


def _merge_anr(
    records: list[tuple[str, str]], skipped: list[Skipped]
) -> list[tuple[str, dict[str, Any]]]:
    """Parts of one stall merged: samples by time, durations summed, earliest start."""
    merged: dict[str, dict[str, Any]] = {}
    for key, value in records:
        try:
            part = json.loads(value)
        except ValueError:
            skipped.append(Skipped(0, f"anr {key}: not JSON"))
            continue
        if not isinstance(part, dict):
            skipped.append(Skipped(0, f"anr {key}: not a JSON object"))
            continue
        stall = key.split("_", 1)[0]
        into = merged.setdefault(stall, {"stacks": [], "duration": 0})
        into["stacks"].extend(as_list(part.get("stacks")))
        duration = part.get("duration")
        if isinstance(duration, int | float):
            into["duration"] += duration
        start = part.get("startFrom")
        if isinstance(start, int | float):
            into["startFrom"] = min(start, into.get("startFrom", start))
    for stall_value in merged.values():
        stall_value["stacks"].sort(key=lambda sample: _number(as_dict(sample).get("time")))
    return sorted(merged.items())


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def _addresses(value: object) -> list[int]:
    if not isinstance(value, str):
        return []
    found = []
    for token in value.split(","):
        address = as_int(token.strip())
        if address is not None:
            found.append(address)
    return found


def _tree_paths(roots: object) -> list[tuple[list[int], int]]:
    """Root-to-leaf address paths (outermost first) with their sample counts."""
    paths: list[tuple[list[int], int]] = []
    stack: list[tuple[dict[str, Any], list[int]]] = [
        (node, []) for node in reversed(as_list(roots)) if isinstance(node, dict)
    ]
    while stack and len(paths) < MAX_TREE_PATHS:
        node, prefix = stack.pop()
        address = as_int(node.get("frame"))
        path = [*prefix, address] if address is not None else prefix
        children = [child for child in as_list(node.get("children")) if isinstance(child, dict)]
        if children:
            stack.extend((child, path) for child in reversed(children))
        elif path:
            count = as_int(node.get("count"))
            paths.append((path, count or 0))
    return paths


def _ext_records(path: Path) -> list[tuple[str, str]]:
    try:
        text = read_side_file(path).decode("utf-8", errors="replace")
    except StoreError as exc:
        raise FormatError(str(path), str(exc).removeprefix(f"{path}: ")) from exc
    records = []
    for chunk in text.split(CPU_EXT_DELIMITER):
        key, comma, value = chunk.strip().partition(",")
        if comma and key and value:
            records.append((key, value))
    return records


class _Locator:
    """Address → image by the largest load address at or below it."""

    def __init__(self, images: list[CrashImage]) -> None:
        order = sorted(range(len(images)), key=lambda index: images[index].load_address)
        self._images = images
        self._order = order
        self._bases = [images[index].load_address for index in order]

    def frame(self, address: int) -> CrashFrame:
        position = bisect_right(self._bases, address) - 1
        if position < 0:
            return CrashFrame(address=address)
        index = self._order[position]
        return CrashFrame(address=address, image=self._images[index].name, image_index=index)
