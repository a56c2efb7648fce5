"""Binary images (loaded executables and libraries) and the device they were loaded on."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class BinaryImage:
    """One loaded image: where it sits in memory and the debug id that finds its symbols.

    ``debug_id`` is the Mach-O LC_UUID (or ELF build id) as lowercase hex without dashes;
    ``base_address`` is the load address of its header; ``slide`` the ASLR offset.
    """

    name: str
    debug_id: str
    base_address: int
    slide: int = 0


@dataclass(frozen=True, slots=True)
class ImageList:
    """The images of one process plus what MTHawkeye's ``dyld-images`` says about the device."""

    images: list[BinaryImage] = field(default_factory=list)
    os_version: str | None = None
    arch: str | None = None
    os_build: str | None = None
    app_name: str | None = None
