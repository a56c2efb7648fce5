"""Python ``crash`` records in the one crash model, so they group like iOS reports (pure).

A Python frame becomes a ``CrashFrame`` whose image is its source file (by base name, so the
same bug groups across machines and install folders) and whose symbol is its function; each
file is an image marked in-app or not from where it lived (``Frame.in_app``, decided by the agent
that saw the paths). ``crash_grouping.fingerprint`` then applies the same rules as to iOS crashes:
top in-app frames, else top system frames, else the type with its normalised message.
"""

from __future__ import annotations

from datetime import UTC, datetime

from hawkwatch.analysis.crash_grouping import DEFAULT_GROUPING, Fingerprint, GroupingConfig
from hawkwatch.analysis.crash_grouping import fingerprint as crash_fingerprint
from hawkwatch.model.crash import CrashException, CrashFrame, CrashImage, CrashReport, CrashThread
from hawkwatch.model.records.crash import Crash, Frame

FORMAT = "python"


def to_crash_report(crash: Crash, *, process: str | None = None) -> CrashReport:
    """The crash as a ``CrashReport`` (format ``python``): crashed thread first, images by file."""
    images: list[CrashImage] = []
    by_file: dict[tuple[str, bool], int] = {}

    def frame(item: Frame) -> CrashFrame:
        name = item.file.replace("\\", "/").rsplit("/", 1)[-1] or item.file
        key = (name, item.in_app)
        index = by_file.get(key)
        if index is None:
            index = by_file[key] = len(images)
            images.append(CrashImage(name=name, load_address=0, path=item.file, in_app=item.in_app))
        symbol = "(module)" if item.function == "<module>" else item.function
        return CrashFrame(
            address=0, image=name, image_index=index, symbol=symbol, file=item.file, line=item.line
        )

    crashed = CrashThread(
        index=0, name=crash.thread or None, crashed=True, frames=[frame(f) for f in crash.frames]
    )
    others = [
        CrashThread(index=i, name=t.name, frames=[frame(f) for f in t.frames])
        for i, t in enumerate(crash.threads, start=1)
    ]
    is_signal = crash.kind == "signal"
    return CrashReport(
        format=FORMAT,
        timestamp=datetime.fromtimestamp(crash.time, UTC).isoformat(),
        process=process,
        pid=crash.pid,
        exception=CrashException(
            type=None if is_signal else crash.type,
            signal=crash.type if is_signal else None,
            reason=crash.message or None,
        ),
        threads=[crashed, *others],
        images=images,
    )


def python_fingerprint(crash: Crash, config: GroupingConfig = DEFAULT_GROUPING) -> Fingerprint:
    """The crash's fingerprint, by the iOS grouping's own code path."""
    return crash_fingerprint(to_crash_report(crash), config)
