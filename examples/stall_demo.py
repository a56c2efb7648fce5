"""An asyncio service whose handlers sometimes block the event loop, for hawkwatch to catch.

    hawkwatch run --app-name stall-demo -- python examples/stall_demo.py
    hawkwatch report                        # "Stalls": where the loop blocked, and the line

Three handlers block the loop in the three usual ways: a synchronous HTTP-style wait
(``time.sleep`` standing in for ``requests.get``), a CPU-heavy computation, and a regular
expression that backtracks catastrophically (C code holding the GIL: the stall monitor's
faulthandler backstop names it). A well-behaved handler awaits instead and never shows up.
"""

from __future__ import annotations

import asyncio
import re
import time

EMAIL = re.compile(r"^([a-zA-Z0-9]+)*@example\.com$")


async def fetch_profile() -> None:
    time.sleep(0.6)  # a blocking client call inside a coroutine


async def render_report() -> None:
    total = 0
    deadline = time.perf_counter() + 0.7
    while time.perf_counter() < deadline:  # CPU work that should go to an executor
        total += sum(i * i for i in range(1000))


async def validate_email() -> None:
    EMAIL.match("a" * 24 + "!")  # catastrophic backtracking on a bad address


async def well_behaved() -> None:
    await asyncio.sleep(0.6)


async def main() -> None:
    for handler in (well_behaved, fetch_profile, render_report, validate_email, fetch_profile):
        await asyncio.sleep(0.5)
        await handler()
    await asyncio.sleep(0.5)


if __name__ == "__main__":
    asyncio.run(main())
