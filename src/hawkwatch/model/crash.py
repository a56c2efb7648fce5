"""One crash model for every crash format: Apple ``.crash`` / ``.ips``, KSCrash JSON, MTHawkeye.

Readers in ``formats/`` fill it, ``symbols/`` adds function/file/line to its frames, analysis
groups it, renderers print it. Addresses are runtime (slid) addresses; an image's
``load_address`` is where its Mach-O header sat in memory. Frames are listed innermost first.
Fields a format does not carry stay at their defaults (None / empty).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import NamedTuple


def normalize_debug_id(value: str) -> str:
    """UUID or build id as lowercase hex without dashes or braces: the key debug files match on."""
    return value.strip().strip("<>{}").replace("-", "").lower()


class SourceLocation(NamedTuple):
    """What symbolication found for one address; several per frame when functions were inlined.

    Listed innermost (most deeply inlined) first; all but the last have ``inlined=True``.
    A NamedTuple rather than a frozen dataclass: a symbolicator builds one per new frame, and
    a frozen slotted dataclass's ``__init__`` (one ``object.__setattr__`` per field) cost more
    than the lookup itself. Fields and attribute access are as before; unlike the dataclass it
    also compares equal to a plain tuple of the same values.
    """

    symbol: str
    file: str | None = None
    line: int | None = None
    symbol_offset: int | None = None
    inlined: bool = False


@dataclass(slots=True)
class CrashFrame:
    """One native frame. ``symbol``/``file``/``line`` come from the report or symbolication."""

    address: int
    image: str | None = None
    image_index: int | None = None
    symbol: str | None = None
    symbol_offset: int | None = None
    file: str | None = None
    line: int | None = None
    inlined: bool = False
    symbolicated: list[SourceLocation] = field(default_factory=list)


@dataclass(slots=True)
class CrashThread:
    """One thread of the crashed process, frames innermost first."""

    index: int
    name: str | None = None
    queue: str | None = None
    crashed: bool = False
    frames: list[CrashFrame] = field(default_factory=list)
    registers: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class CrashImage:
    """One loaded binary image; ``end_address`` is inclusive (as in ``Binary Images:``)."""

    name: str
    load_address: int
    end_address: int | None = None
    arch: str | None = None
    uuid: str | None = None
    path: str | None = None
    version: str | None = None
    text_vmaddr: int | None = None
    in_app: bool | None = None
    """Known to be (or not be) the app's own code; None: decided from the bundle's path. Python
    crashes set it from where the source file lives (site-packages and the stdlib are not)."""

    @property
    def debug_id(self) -> str | None:
        return normalize_debug_id(self.uuid) if self.uuid else None

    def contains(self, address: int) -> bool:
        end = self.end_address
        return self.load_address <= address and (end is None or address <= end)


@dataclass(slots=True)
class CrashException:
    """Why the process died: Mach exception, signal, codes and an ObjC/C++/Swift reason."""

    type: str | None = None
    signal: str | None = None
    codes: str | None = None
    subtype: str | None = None
    reason: str | None = None
    name: str | None = None
    address: int | None = None


@dataclass(slots=True)
class CrashReport:
    """One crash, whatever file it came from.

    ``format`` names the reader (``apple-text``, ``ips``, ``kscrash``, ``hawkeye``);
    ``metadata`` keeps every header as written (``Process``, ``OS Version``, ...);
    ``last_exception_backtrace`` is the ObjC exception's stack when the report has one;
    ``recrash`` is a crash that happened inside the crash handler (KSCrash);
    ``process_path`` is the main executable's path (``Path:``, ``procPath``), which tells the
    app's own images from the system's.
    """

    format: str
    metadata: dict[str, str] = field(default_factory=dict)
    incident_id: str | None = None
    timestamp: str | None = None
    process: str | None = None
    pid: int | None = None
    bundle_id: str | None = None
    app_version: str | None = None
    os_version: str | None = None
    hardware_model: str | None = None
    arch: str | None = None
    exception: CrashException = field(default_factory=CrashException)
    threads: list[CrashThread] = field(default_factory=list)
    images: list[CrashImage] = field(default_factory=list)
    application_specific_info: str | None = None
    last_exception_backtrace: list[CrashFrame] = field(default_factory=list)
    recrash: CrashReport | None = None
    process_path: str | None = None
    _by_address: _ImageIndex | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def crashed_thread(self) -> CrashThread | None:
        return next((thread for thread in self.threads if thread.crashed), None)

    def image_for(self, frame: CrashFrame) -> CrashImage | None:
        """The image holding a frame: by index when the format gives one, else by address."""
        if frame.image_index is not None and 0 <= frame.image_index < len(self.images):
            return self.images[frame.image_index]
        index = self._by_address
        if index is None or not index.describes(self.images):
            index = self._by_address = _ImageIndex(self.images)
        found = index.find(frame.address)
        if found is not None:
            return found
        if frame.image:
            return next((image for image in self.images if image.name == frame.image), None)
        return None


class _ImageIndex:
    """Images sorted by load address, for ``CrashReport.image_for`` in O(log n) per frame.

    Among the images containing an address, the one loaded last wins (as a linear scan would
    pick); ``reach`` (the furthest end of any image up to each position, None counting as
    unbounded) stops the backward walk as soon as no earlier image can contain the address.
    Rebuilt when the report's image list is replaced or changes length.
    """

    __slots__ = ("_count", "_images", "_reach", "_source", "_starts")

    def __init__(self, images: list[CrashImage]) -> None:
        self._source, self._count = images, len(images)  # held: its id cannot be reused
        # Equal load addresses: the one listed first sorts last, so it is the one found.
        order = sorted(range(len(images)), key=lambda i: (images[i].load_address, -i))
        self._images = [images[i] for i in order]
        self._starts = [image.load_address for image in self._images]
        self._reach: list[float] = []
        furthest = float("-inf")
        for image in self._images:
            end = float("inf") if image.end_address is None else image.end_address
            furthest = max(furthest, end)
            self._reach.append(furthest)

    def describes(self, images: list[CrashImage]) -> bool:
        return self._source is images and self._count == len(images)

    def find(self, address: int) -> CrashImage | None:
        position = bisect.bisect_right(self._starts, address) - 1
        while position >= 0 and self._reach[position] >= address:
            image = self._images[position]
            if image.contains(address):
                return image
            position -= 1
        return None
