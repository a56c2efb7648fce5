"""The live-allocation report: categories, top stacks and growth, by MTHawkeye's and Matrix's
rules (``detectors.md`` §5), from any ``LiveAllocations`` snapshot.

Pure: takes the model and the rules, returns an ``AllocationReport``. A frame's image is its
app's own when it sits next to the main executable (inside the ``.app`` bundle) or, without a
known executable, under MTHawkeye's app prefixes (``/var/``, ``/private/var/``, ``/Users/``);
``libswift*`` inside the bundle counts as system (``hawkeye.md`` §5.1).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence

from hawkwatch.model.allocation_report import (
    AllocationReport,
    CategoryEntry,
    GrowthEntry,
    ReportRules,
    StackEntry,
)
from hawkwatch.model.allocations import (
    AllocationFrame,
    Group,
    LiveAllocations,
    NativeFrame,
    growth,
)
from hawkwatch.model.crash import CrashImage

_APP_PREFIXES = ("/var/", "/private/var/", "/Users/")


def build_allocation_report(
    live: LiveAllocations,
    rules: ReportRules | None = None,
    *,
    baseline: LiveAllocations | None = None,
    skipped: Sequence[str] = (),
) -> AllocationReport:
    """Report of ``live``; with ``baseline`` (same table; default ``live.baseline``), the
    stacks that grew since it."""
    rules = rules or ReportRules()
    baseline = baseline if baseline is not None else live.baseline
    app_images = app_image_names(live.images, live.process_path)
    stack_cache: dict[int, tuple[AllocationFrame, ...]] = {}

    def frames(stack_id: int) -> tuple[AllocationFrame, ...]:
        found = stack_cache.get(stack_id)
        if found is None:
            found = stack_cache[stack_id] = live.stacks.stack(stack_id)
        return found

    def entry(group: Group, category: str = "") -> StackEntry:
        stack = frames(group.stack_id)
        vm = group.category.startswith("VM")
        threshold = rules.vm_threshold_bytes if vm else rules.malloc_threshold_bytes
        return StackEntry(
            group.stack_id,
            group.bytes,
            group.count,
            stack,
            _caller(stack, app_images),
            group.bytes >= threshold,
            category,
        )

    by_category: dict[str, list[Group]] = {}
    for group in live.groups:
        by_category.setdefault(group.category, []).append(group)
    totals = sorted(
        (
            (sum(g.bytes for g in groups), sum(g.count for g in groups), name)
            for name, groups in by_category.items()
        ),
        key=lambda item: (-item[0], -item[1], item[2]),
    )
    categories = []
    for rank, (size, count, name) in enumerate(totals):
        if size < rules.category_min_bytes and rank >= rules.category_top:
            continue
        groups = sorted(by_category[name], key=lambda g: (-g.bytes, -g.count, g.stack_id))
        listed = tuple(
            entry(group)
            for index, group in enumerate(groups)
            if group.bytes >= rules.stack_min_bytes or index < rules.stack_top
        )
        categories.append(CategoryEntry(name, size, count, len(groups), listed))
    per_stack: dict[int, list[int]] = {}
    for group in live.groups:
        into = per_stack.setdefault(group.stack_id, [0, 0])
        into[0] += group.bytes
        into[1] += group.count
    merged = [Group(stack, "", size, count) for stack, (size, count) in per_stack.items()]
    top_bytes = sorted(merged, key=lambda g: (-g.bytes, -g.count, g.stack_id))[: rules.top]
    top_count = sorted(merged, key=lambda g: (-g.count, -g.bytes, g.stack_id))[: rules.top]
    native = [f for f in live.stacks.frames if isinstance(f, NativeFrame)]
    return AllocationReport(
        source=live.source,
        total_live_bytes=live.total_bytes,
        live_count=live.total_count,
        categories=tuple(categories),
        top_by_bytes=tuple(entry(g) for g in top_bytes if g.bytes),
        top_by_count=tuple(entry(g) for g in top_count if g.count),
        category_count=len(by_category),
        stack_count=len(per_stack),
        position=live.position,
        time_s=live.time_s,
        growth=_growth(live, baseline, frames, rules.top),
        baseline_position=baseline.position if baseline is not None else None,
        symbolicated_frames=sum(1 for f in native if f.symbol),
        native_frames=len(native),
        metadata=dict(live.metadata),
        notes=live.notes,
        skipped=tuple(skipped),
    )


def _growth(
    live: LiveAllocations,
    baseline: LiveAllocations | None,
    frames: Callable[[int], tuple[AllocationFrame, ...]],
    top: int,
) -> tuple[GrowthEntry, ...]:
    if baseline is None:
        return ()
    changes = [g for g in growth(baseline, live) if g.bytes_delta or g.count_delta]
    return tuple(
        GrowthEntry(
            g.stack_id,
            g.category,
            g.bytes_delta,
            g.count_delta,
            g.bytes_after,
            g.count_after,
            frames(g.stack_id),
        )
        for g in changes[:top]
    )


def app_image_names(images: Sequence[CrashImage], process_path: str | None) -> frozenset[str]:
    """Names of the images that belong to the app rather than the OS."""
    bundle = _bundle(process_path) if process_path else None
    names = set()
    for image in images:
        path = image.path or ""
        if posixpath.basename(path).startswith("libswift"):
            continue
        if bundle is not None:
            if path.startswith(bundle + "/") or path == process_path:
                names.add(image.name)
        elif path.startswith(_APP_PREFIXES):
            names.add(image.name)
    return frozenset(names)


def _bundle(process_path: str) -> str:
    """The ``.app`` folder holding the executable, else its folder."""
    parts = process_path.split("/")
    for index in range(len(parts) - 1, 0, -1):
        if parts[index].endswith(".app"):
            return "/".join(parts[: index + 1])
    return posixpath.dirname(process_path)


def _caller(
    frames: tuple[AllocationFrame, ...], app_images: frozenset[str]
) -> AllocationFrame | None:
    for frame in frames:
        if isinstance(frame, NativeFrame):
            if frame.image in app_images:
                return frame
        else:
            return frame
    return None
