"""MTHawkeye address stacks (ANR samples, CPU high-load trees) as a crash model to symbolicate.

Spec: ``formats/hawkeye.md`` §4 (``anr``, ``cpu-highload-stackframe``), §4.1 (ANR records split
into parts), §5.1 (``dyld-images``), §5.3 (``cpu-highload-stackframe-ext``). Records are decoded
through ``model.records`` (``Anr``, ``CpuHighLoadStackframe``).

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

from bisect import bisect_right
from pathlib import Path
from typing import Final

from hawkwatch.errors import FormatError, NotASessionError
from hawkwatch.formats._crash_values import basename
from hawkwatch.formats.hawkeye import read_dyld_images
from hawkwatch.formats.hawkeye_cpu import parse_stackframe_ext
from hawkwatch.model import ImageList, Parsed, Skipped, collections
from hawkwatch.model.crash import CrashFrame, CrashImage, CrashReport, CrashThread
from hawkwatch.model.profile import CallNode
from hawkwatch.model.records import Anr, CpuHighLoadStackframe, decode_all, merge_parts
from hawkwatch.store import Session

FORMAT: Final = "hawkeye"
MAX_TREE_PATHS: Final = 200


def read_session_stacks(folder: str | Path) -> Parsed[CrashReport]:
    """The ANR and CPU high-load stacks of one MTHawkeye session folder."""
    try:
        session = Session.open(folder)
    except NotASessionError as exc:
        raise FormatError(str(folder), str(exc).split(": ", 1)[-1]) from exc
    read = session.records()
    skipped: list[Skipped] = list(read.skipped)
    decoded = decode_all(
        r
        for r in read.records
        if r.collection in (collections.ANR, collections.CPU_HIGHLOAD_STACKFRAME)
    )
    skipped += [Skipped(0, f"{r.collection} {r.key}: {r.reason}") for r in decoded.rejected]
    trees = [(tree.key, tree.roots) for tree in decoded.of(CpuHighLoadStackframe)]
    ext_path = session.path / collections.CPU_HIGHLOAD_STACKFRAME_EXT
    if ext_path.is_file():
        ext = parse_stackframe_ext(ext_path.read_bytes())
        trees += ext.value.items()
        skipped += ext.skipped
    dyld = read_dyld_images(session.path)
    if dyld is not None:
        skipped.extend(dyld.skipped)
    report = stacks_report(decoded.keyed(Anr), trees, dyld.value if dyld else None)
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
    anr: list[tuple[str, Anr]],
    cpu: list[tuple[str, tuple[CallNode, ...]]],
    images: ImageList | None,
) -> CrashReport:
    """Build the report from decoded ``(key, anr part)`` records, ``(key, tree)`` CPU trees and
    the session's image list."""
    report = CrashReport(format=FORMAT)
    if images is not None:
        report.process = images.app_name
        report.os_version = images.os_version
        report.arch = images.arch.split()[0] if images.arch else None
        report.metadata["os_build"] = images.os_build or ""
        report.images = crash_images(images)
    locate = _Locator(report.images)
    for stall in sorted(merge_parts(anr), key=lambda stall: stall.key):
        for sample in stall.stacks:
            addresses = sample.addresses()
            if not addresses:
                continue
            report.threads.append(
                CrashThread(
                    index=len(report.threads),
                    name=f"anr {stall.key} +{sample.time - stall.start:.2f}s",
                    frames=[locate.frame(address) for address in addresses],
                )
            )
    for key, roots in cpu:
        for number, (path, count) in enumerate(_tree_paths(roots)):
            report.threads.append(
                CrashThread(
                    index=len(report.threads),
                    name=f"cpu-highload {key} path {number} ({count} samples)",
                    frames=[locate.frame(address) for address in reversed(path)],
                )
            )
    return report


def _tree_paths(roots: tuple[CallNode, ...]) -> list[tuple[list[int], int]]:
    """Root-to-leaf address paths (outermost first) with their sample counts."""
    paths: list[tuple[list[int], int]] = []
    stack: list[tuple[CallNode, list[int]]] = [(node, []) for node in reversed(roots)]
    while stack and len(paths) < MAX_TREE_PATHS:
        node, prefix = stack.pop()
        path = [*prefix, node.frame] if isinstance(node.frame, int) else prefix
        if node.children:
            stack.extend((child, path) for child in reversed(node.children))
        elif path:
            paths.append((path, node.count))
    return paths


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
