"""The server process of ``steady_paired.py``: ``asyncio_http.py``'s server with one more route,
``/__agent``, that starts and stops the agent in this process between slices of load.

Run: python benchmarks/workloads/steady_http.py [--port 0]

``GET /__agent?on=1`` calls ``hawkwatch.start()`` with default options (the environment holds
HAWKWATCH_HOME only), ``GET /__agent?on=0`` ``hawkwatch.stop()``; both from the loop's thread, in
the handler, while the load generator waits. The stall monitor then finds the running loop by
itself, as docs/agent.md says it finds every asyncio loop (a loop already running at start is
found in the thread stacks; one started later through the wrapped ``run_forever``): the same
watchdog pinging the same loop either way, so no ``hawkwatch.watch_loop`` call.

``GET /__agent?expect=on`` (or ``off``) answers ``{"problems": [...], "cpu_s": ..., "monitors":
[...]}``: how the agent's state differs from the expected one (``agent_state.problems``, the loop
included), this process's CPU time (every thread, so the agent's own threads count) and the
running agent's monitors. Everything else, ``/__shutdown`` included, is ``asyncio_http.py``'s.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from urllib.parse import parse_qs, urlsplit

import agent_state  # type: ignore[import-not-found]
import asyncio_http  # type: ignore[import-not-found]

import hawkwatch

_route = asyncio_http.route


def route(method: str, target: str, body: bytes) -> tuple[int, object]:
    parts = urlsplit(target)
    if parts.path != "/__agent":
        return _route(method, target, body)
    query = {name: values[0] for name, values in parse_qs(parts.query).items()}
    if query.get("on") == "1":
        return 200, {"started": hawkwatch.start()}
    if query.get("on") == "0":
        hawkwatch.stop()
        return 200, {"stopped": True}
    if query.get("expect") in ("on", "off"):
        loop = asyncio.get_running_loop()
        found = agent_state.problems(expect_on=query["expect"] == "on", loop=loop)
        cpu_s = time.process_time()
        return 200, {"problems": found, "cpu_s": cpu_s, "monitors": agent_state.running_monitors()}
    return 400, {"error": "/__agent?on=1, ?on=0, ?expect=on or ?expect=off"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    args = parser.parse_args()
    asyncio_http.route = route
    asyncio.run(asyncio_http.serve(args.port))
    hawkwatch.stop()


if __name__ == "__main__":
    main()
