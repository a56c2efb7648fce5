"""An asyncio workload for ``benchmarks/memory_overhead.py``: producer/consumer tasks passing
JSON messages through queues, with many short awaits (the event loop's own overhead matters).

Run: python benchmarks/workloads/asyncio_mix.py [--scale 1.0] [--start-agent]
The last line printed is one JSON object with ``work_s`` (perf_counter around the work),
``work_cpu_s`` (process CPU over it, all threads) and whether a hawkwatch agent was running.
``--scale 1.0`` is about 3 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time


async def producer(queue: asyncio.Queue[str | None], n: int, seed: int) -> None:
    for i in range(n):
        await queue.put(json.dumps({"id": i, "seed": seed, "tags": [str(i % 7)] * 5}))
        if i % 16 == 0:
            await asyncio.sleep(0)
    await queue.put(None)


async def consumer(queue: asyncio.Queue[str | None]) -> int:
    total = 0
    while (item := await queue.get()) is not None:
        message = json.loads(item)
        total += message["id"] + len(message["tags"])
    return total


async def work(scale: float) -> int:
    n = max(16, round(40000 * scale))
    total = 0
    for round_ in range(8):
        queues: list[asyncio.Queue[str | None]] = [asyncio.Queue(maxsize=64) for _ in range(16)]
        producers = [producer(q, n // 16, round_ * 16 + k) for k, q in enumerate(queues)]
        consumers = [consumer(q) for q in queues]
        results = await asyncio.gather(*producers, *consumers)
        total += sum(r for r in results if isinstance(r, int))
    return total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--start-agent", action="store_true")
    args = parser.parse_args()
    if args.start_agent:
        import hawkwatch

        hawkwatch.start()
    started, cpu_started = time.perf_counter(), time.process_time()
    checksum = asyncio.run(work(args.scale))
    work_s = time.perf_counter() - started
    work_cpu_s = time.process_time() - cpu_started
    agent = False
    try:
        from hawkwatch.agent import current_agent

        agent = current_agent() is not None
    except ImportError:
        pass
    print(
        json.dumps(
            {"work_s": work_s, "work_cpu_s": work_cpu_s, "agent": agent, "checksum": checksum}
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
