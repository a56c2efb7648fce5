"""Category names for allocations, shared by the MSL, ``.memgraph`` and MTHawkeye readers.

Malloc blocks are ``malloc``; VM regions are named after their user tag (bits 24–31 of the type
flags, ``VM_MEMORY_*`` in ``mach/vm_statistics.h``) as ``VM: IOSURFACE``; mapped files and shared
memory (flag 128) are ``VM: mapped file``. Matrix's ``VM: `` prefix, MTHawkeye's split of
anonymous VM from mapped files.
"""

from __future__ import annotations

from typing import Final

MALLOC: Final = "malloc"
MAPPED_FILE: Final = "VM: mapped file"
FLAG_MAPPED_FILE: Final = 128

_TAGS: Final = {
    1: "MALLOC", 2: "MALLOC_SMALL", 3: "MALLOC_LARGE", 4: "MALLOC_HUGE", 5: "SBRK",
    6: "REALLOC", 7: "MALLOC_TINY", 8: "MALLOC_LARGE_REUSABLE", 9: "MALLOC_LARGE_REUSED",
    10: "ANALYSIS_TOOL", 11: "MALLOC_NANO", 12: "MALLOC_MEDIUM", 13: "MALLOC_PROB_GUARD",
    20: "MACH_MSG", 21: "IOKIT", 30: "STACK", 31: "GUARD", 32: "SHARED_PMAP", 33: "DYLIB",
    34: "OBJC_DISPATCHERS", 35: "UNSHARED_PMAP", 40: "APPKIT", 41: "FOUNDATION",
    42: "COREGRAPHICS", 43: "CORESERVICES", 44: "JAVA", 45: "COREDATA",
    46: "COREDATA_OBJECTIDS", 50: "ATS", 51: "LAYERKIT", 52: "CGIMAGE", 53: "TCMALLOC",
    54: "COREGRAPHICS_DATA", 55: "COREGRAPHICS_SHARED", 56: "COREGRAPHICS_FRAMEBUFFERS",
    57: "COREGRAPHICS_BACKINGSTORES", 58: "COREGRAPHICS_XALLOC", 60: "DYLD", 61: "DYLD_MALLOC",
    62: "SQLITE", 63: "JAVASCRIPT_CORE", 64: "JAVASCRIPT_JIT_EXECUTABLE_ALLOCATOR",
    65: "JAVASCRIPT_JIT_REGISTER_FILE", 66: "GLSL", 67: "OPENCL", 68: "COREIMAGE",
    69: "WEBCORE_PURGEABLE_BUFFERS", 70: "IMAGEIO", 71: "COREPROFILE", 72: "ASSETSD",
    73: "OS_ALLOC_ONCE", 74: "LIBDISPATCH", 75: "ACCELERATE", 76: "COREUI", 77: "COREUIFILE",
    78: "GENEALOGY", 79: "RAWCAMERA", 80: "CORPSEINFO", 81: "ASL", 82: "SWIFT_RUNTIME",
    83: "SWIFT_METADATA", 84: "DHMM", 86: "SCENEKIT", 87: "SKYWALK", 88: "IOSURFACE",
    89: "LIBNETWORK", 90: "AUDIO", 91: "VIDEOBITSTREAM", 92: "CM_XPC", 93: "CM_RPC",
    94: "CM_MEMORYPOOL", 95: "CM_READCACHE", 96: "CM_CRABS", 97: "QUICKLOOK_THUMBNAILS",
    98: "ACCOUNTS", 99: "SANITIZER", 100: "IOACCELERATOR", 101: "CM_REGWARP",
    102: "EAR_DECODER", 103: "COREUI_CACHED_IMAGE_DATA", 104: "COLORSYNC", 105: "BTINFO",
    106: "CM_HLS",
}  # fmt: skip


def vm_tag_name(tag: int) -> str:
    """``VM_MEMORY_*`` name of a user tag, without the prefix."""
    if tag == 0:
        return "anonymous"
    if 240 <= tag <= 255:
        return f"APPLICATION_SPECIFIC_{tag - 239}"
    return _TAGS.get(tag, f"tag {tag}")


def vm_category(tag: int, flags: int) -> str:
    """Category of a VM region from its user tag and type flags."""
    if flags & FLAG_MAPPED_FILE:
        return MAPPED_FILE
    return f"VM: {vm_tag_name(tag)}"
