"""A JetsamEvent written for the tests, in the layout of apple-crash.md §4 (no licensed sample)."""

from __future__ import annotations

import json

APP_UUID = "8e4d2f1c-3b5a-3c7d-9e0f-1a2b3c4d5e6f"
HEADER = {
    "bug_type": "298",
    "timestamp": "2020-10-15 17:29:58.00 +0100",
    "os_version": "iPhone OS 14.0 (18A373)",
    "incident_id": "6E1A07C3-0F5B-4D43-9C8B-2C5D6F1A9B11",
}


def jetsam_body(page_size: int = 16_384) -> dict:
    return {
        "crashReporterKey": "0123456789abcdef0123456789abcdef01234567",
        "kernel": "Darwin Kernel Version 20.0.0",
        "product": "iPhone12,1",
        "incident": HEADER["incident_id"],
        "date": "2020-10-15 17:29:58.79 +0100",
        "build": "iPhone OS 14.0 (18A373)",
        "timeDelta": 7,
        "memoryStatus": {
            "compressorSize": 38_123,
            "compressions": 1_234_567,
            "decompressions": 765_432,
            "zoneMapCap": 1_610_612_736,
            "largestZone": "APFS_4K_OBJS",
            "largestZoneSize": 41_484_288,
            "pageSize": page_size,
            "uncompressed": 101_234,
            "zoneMapSize": 184_172_544,
            "memoryPages": {
                "active": 60_543,
                "throttled": 0,
                "fileBacked": 30_123,
                "wired": 40_111,
                "anonymous": 70_222,
                "purgeable": 1_234,
                "inactive": 50_321,
                "free": 3_210,
                "speculative": 1_111,
            },
        },
        "largestProcess": "Photos",
        "genCounter": 1,
        "processes": [
            {
                "uuid": "11111111-2222-3333-4444-555555555555",
                "states": ["daemon", "idle"],
                "lifetimeMax": 1_200,
                "killDelta": 12_345,
                "age": 948_000_000,
                "purgeable": 0,
                "fds": 25,
                "genCount": 0,
                "coalition": 70,
                "rpages": 800,
                "priority": 0,
                "reason": "vm-pageshortage",
                "physicalPages": {"internal": [700, 40]},
                "pid": 301,
                "cpuTime": 0.25,
                "name": "com.apple.Safari.SafeBrowsing.Se",
            },
            {
                "uuid": APP_UUID,
                "states": ["frontmost", "resume"],
                "lifetimeMax": 131_300,
                "killDelta": 2_000,
                "rpages": 131_282,
                "priority": 10,
                "reason": "per-process-limit",
                "pid": 1052,
                "cpuTime": 21.5,
                "name": "TouchCanvas",
            },
            {
                "uuid": "99999999-8888-7777-6666-555555555555",
                "states": ["background"],
                "lifetimeMax": 200_000,
                "rpages": 180_000,
                "priority": 3,
                "pid": 222,
                "name": "Photos",
            },
        ],
    }


def jetsam_bytes(body: dict | None = None) -> bytes:
    """Metadata line, then the pretty-printed body, as the OS writes it."""
    return (
        json.dumps(HEADER, separators=(",", ":"))
        + "\n"
        + json.dumps(body or jetsam_body(), indent=2)
    ).encode()
