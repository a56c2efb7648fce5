"""Where the network monitor's instructions per request go, step by step (under callgrind).

Usage: python net_breakdown.py FAMILY URL N on|off. ``network_instructions.py --breakdown`` runs
it under ``valgrind --tool=callgrind --zero-before=os_getppid --dump-before=os_getpgrp``: each
``os.getpgrp()`` below closes one step's count. Steps: the N requests (with the monitor's
writing held back: its drain is not scheduled), then, on the requests' ended timelines, each
part of writing them: ``complete`` (describing what the request path kept), ``phases``, the
redacted URL facts, the named call sites, the thread's name, ``to_record`` as a whole (these
parts included), ``record_key``, the JSON encoding alone and ``RecordStore.write_many`` (key
and encoding included). With ``off`` only the requests are counted (the monitor is off).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any

import hawkwatch
from hawkwatch.agent.api import current_agent
from hawkwatch.agent.plugins import net_timeline, network

family, url, count, arm = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
network.DRAIN_INTERVAL_S = 1e6  # the ended requests stay queued: written step by step below
options: dict[str, Any] = {"network.enabled": arm == "on", "stall.enabled": False}
for name in ("resources", "cpu", "memory", "gc", "crash"):
    options[f"{name}.enabled"] = False
hawkwatch.start(**options)


async def async_run(n: int) -> None:
    if family == "aiohttp":
        import aiohttp

        async with aiohttp.ClientSession() as session:
            for _ in range(n):
                async with session.get(url) as response:
                    await response.read()
        return
    import httpx

    async with httpx.AsyncClient() as client:
        for _ in range(n):
            _ = (await client.get(url)).content


def run(n: int) -> None:
    if family in ("aiohttp", "httpx-async"):
        asyncio.run(async_run(n))
    elif family == "requests":
        import requests

        with requests.Session() as session:
            for _ in range(n):
                _ = session.get(url).content
    elif family == "httpx":
        import httpx

        with httpx.Client() as client:
            for _ in range(n):
                _ = client.get(url).content
    else:
        import http.client
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port)
        for _ in range(n):
            conn.request("GET", "/")
            conn.getresponse().read()
        conn.close()


agent = current_agent()
assert agent is not None
monitor = next((m for m in agent.monitors if isinstance(m, network.NetworkMonitor)), None)
run(max(count // 10, 20))  # warm-up: imports, connections, caches
if monitor is not None:
    monitor._ended.clear()
os.getppid()  # callgrind: --zero-before=os_getppid
run(count)
os.getpgrp()  # step: requests
if monitor is not None and monitor._ctx is not None:
    import msgspec

    ended = list(monitor._ended)
    monitor._ended.clear()
    keep = monitor._keep_params
    wall = time.time() - time.perf_counter_ns() / 1e9
    os.getpgrp()  # step: (nothing: the cost of a step boundary)
    for timeline in ended:
        timeline.complete()
    os.getpgrp()  # step: complete
    for timeline in ended:
        timeline.phases()
    os.getpgrp()  # step: phases
    for timeline in ended:
        net_timeline.url_facts(timeline.url, timeline.origin, keep)
    os.getpgrp()  # step: url facts
    for timeline in ended:
        net_timeline._call_sites_named(timeline.frames)
    os.getpgrp()  # step: call sites
    for timeline in ended:
        _ = None if timeline.thread is None else timeline.thread.name
    os.getpgrp()  # step: thread name
    records = [timeline.to_record(keep, wall) for timeline in ended]
    os.getpgrp()  # step: to_record
    for record in records:
        record.record_key()
    os.getpgrp()  # step: record_key
    encode_into, buffer = msgspec.json.Encoder().encode_into, bytearray()
    for record in records:
        encode_into(record, buffer, len(buffer))
    os.getpgrp()  # step: encode
    monitor._ctx.records.write_many(records)
    os.getpgrp()  # step: write_many
hawkwatch.stop()
