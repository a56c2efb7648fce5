"""Crash reports for the test binaries in the three formats a device writes, at known addresses.

Thread 0 crashed in ``hawk::crash_here`` (inside inlined ``hawk::deep``), called from
``lib_entry`` (same dylib), called from ``caller`` in the executable, called from ``dyld``
(an image with no debug file). Addresses are runtime addresses: file address + slide.
"""

from __future__ import annotations

import json

from tests.symbols.debug_files import APP_LOAD, DYLD_LOAD, IMAGE_SIZE, LIB_LOAD, Built

DYLD_UUID = "044CD67E-3A0A-3CA4-8BB3-A9687D5328FE"
DYLD_START = DYLD_LOAD + 0x4C80
APP_PATH = "/private/var/containers/Bundle/Application/6D1D/App.app/app"
LIB_PATH = "/private/var/containers/Bundle/Application/6D1D/App.app/Frameworks/libcrash.dylib"


def stack(built: Built) -> list[tuple[str, int, int]]:
    """Thread 0 innermost first: (image name, image load address, runtime address)."""
    return [
        ("libcrash.dylib", LIB_LOAD, LIB_LOAD + built.crash_pc - built.lib_vmaddr),
        ("libcrash.dylib", LIB_LOAD, LIB_LOAD + built.lib_entry_return - built.lib_vmaddr),
        ("app", APP_LOAD, APP_LOAD + built.caller_return - built.app_vmaddr),
        ("dyld", DYLD_LOAD, DYLD_START),
    ]


def _images(built: Built) -> list[tuple[str, int, str, str, str]]:
    return [
        ("app", APP_LOAD, "arm64", built.app_uuid, APP_PATH),
        ("libcrash.dylib", LIB_LOAD, "arm64", built.lib_uuid, LIB_PATH),
        ("dyld", DYLD_LOAD, "arm64e", DYLD_UUID, "/usr/lib/dyld"),
    ]


def apple_text(built: Built) -> str:
    """A classic ``.crash`` report; UUIDs undashed and lowercase as Apple writes them."""
    lines = [
        "Incident Identifier: 0B8A9E12-3C4D-4E5F-8A9B-0C1D2E3F4A5B",
        "Hardware Model:      iPhone14,2",
        "Process:             app [4242]",
        f"Path:                {APP_PATH}",
        "Identifier:          com.example.app",
        "Version:             1.0 (1)",
        "Code Type:           ARM-64 (Native)",
        "Parent Process:      launchd [1]",
        "",
        "Date/Time:           2026-11-20 10:00:00.0000 +0000",
        "OS Version:          iPhone OS 17.1 (21B80)",
        "Report Version:      104",
        "",
        "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)",
        "Exception Subtype: KERN_INVALID_ADDRESS at 0x0000000000000000",
        "Exception Codes: 0x0000000000000001, 0x0000000000000000",
        "Triggered by Thread:  0",
        "",
        "Thread 0 name:  Dispatch queue: com.apple.main-thread",
        "Thread 0 Crashed:",
    ]
    for number, (name, load, address) in enumerate(stack(built)):
        lines.append(f"{number:<4}{name:<30}\t0x{address:016x} 0x{load:x} + {address - load}")
    lines += ["", "Binary Images:"]
    for name, load, arch, uuid, path in _images(built):
        end = load + IMAGE_SIZE - 1
        undashed = uuid.replace("-", "").lower()
        lines.append(f"{f'0x{load:x}':>18} - {f'0x{end:x}':>18} {name} {arch}  <{undashed}> {path}")
    return "\n".join(lines) + "\n"


def ips(built: Built) -> str:
    """An ``.ips`` (bug_type 309): metadata line, then the JSON body; frames as image offsets."""
    images = _images(built)
    index = {name: position for position, (name, *_rest) in enumerate(images)}
    metadata = {
        "app_name": "app",
        "timestamp": "2026-11-20 10:00:00.00 +0000",
        "app_version": "1.0",
        "slice_uuid": built.app_uuid.lower(),
        "build_version": "1",
        "platform": 2,
        "bundleID": "com.example.app",
        "bug_type": "309",
        "os_version": "iPhone OS 17.1 (21B80)",
        "incident_id": "0B8A9E12-3C4D-4E5F-8A9B-0C1D2E3F4A5B",
        "name": "app",
    }
    body = {
        "uptime": 1000,
        "procName": "app",
        "procPath": APP_PATH,
        "pid": 4242,
        "cpuType": "ARM-64",
        "modelCode": "iPhone14,2",
        "osVersion": {"train": "iPhone OS 17.1", "build": "21B80", "releaseType": "User"},
        "captureTime": "2026-11-20 10:00:00.0000 +0000",
        "bundleInfo": {"CFBundleShortVersionString": "1.0", "CFBundleVersion": "1"},
        "exception": {
            "type": "EXC_BAD_ACCESS",
            "signal": "SIGSEGV",
            "subtype": "KERN_INVALID_ADDRESS at 0x0000000000000000",
            "codes": "0x0000000000000001, 0x0000000000000000",
        },
        "faultingThread": 0,
        "threads": [
            {
                "id": 7001,
                "triggered": True,
                "queue": "com.apple.main-thread",
                "frames": [
                    {"imageIndex": index[name], "imageOffset": address - load}
                    for name, load, address in stack(built)
                ],
            }
        ],
        "usedImages": [
            {
                "source": "P",
                "arch": arch,
                "base": load,
                "size": IMAGE_SIZE,
                "uuid": uuid.lower(),
                "path": path,
                "name": name,
            }
            for name, load, arch, uuid, path in images
        ],
    }
    return json.dumps(metadata) + "\n" + json.dumps(body, indent=2) + "\n"


def kscrash(built: Built) -> str:
    """A KSCrash JSON report (``binary_images``, ``crash.error``, thread backtraces)."""
    cpu = {"arm64": (0x0100000C, 0), "arm64e": (0x0100000C, 2)}
    vmaddr = {"app": built.app_vmaddr, "libcrash.dylib": built.lib_vmaddr, "dyld": 0x180000000}
    document = {
        "report": {
            "id": "0B8A9E12-3C4D-4E5F-8A9B-0C1D2E3F4A5B",
            "timestamp": "2026-11-20T10:00:00Z",
            "type": "standard",
            "version": "3.1.0",
            "process_name": "app",
        },
        "system": {
            "cpu_arch": "arm64",
            "CFBundleIdentifier": "com.example.app",
            "CFBundleExecutablePath": APP_PATH,
            "process_id": 4242,
            "machine": "iPhone14,2",
            "system_name": "iOS",
            "system_version": "17.1",
            "os_version": "21B80",
        },
        "binary_images": [
            {
                "image_addr": load,
                "image_vmaddr": vmaddr[name],
                "image_size": IMAGE_SIZE,
                "name": path,
                "uuid": uuid,
                "cpu_type": cpu[arch][0],
                "cpu_subtype": cpu[arch][1],
            }
            for name, load, arch, uuid, path in _images(built)
        ],
        "crash": {
            "error": {
                "type": "mach",
                "address": 0,
                "mach": {"exception": 1, "exception_name": "EXC_BAD_ACCESS", "code": 1},
                "signal": {"signal": 11, "name": "SIGSEGV"},
            },
            "threads": [
                {
                    "index": 0,
                    "crashed": True,
                    "dispatch_queue": "com.apple.main-thread",
                    "backtrace": {
                        "contents": [
                            {"instruction_addr": address, "object_addr": load, "object_name": name}
                            for name, load, address in stack(built)
                        ],
                        "skipped": 0,
                    },
                }
            ],
        },
    }
    return json.dumps(document, indent=2) + "\n"


WRITERS = {"crash": apple_text, "ips": ips, "json": kscrash}
