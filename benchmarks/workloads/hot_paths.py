"""Per-operation cost of the interpreter paths an agent can hook, for ``agent_overhead.py``.

Run: python benchmarks/workloads/hot_paths.py [--idle 2.0] [--start-agent]

Times a few operations with ``timeit`` (best of 5), in nanoseconds per call:

  id(obj)            a C builtin that raises the ``builtins.id`` audit event (PEP 578), so any
                     Python audit hook (``sys.addaudithook``) runs on every call
  sys._getframe()    audited as ``sys._getframe``; ``logging`` calls it for every record
  copy.deepcopy      calls ``id()`` once per object copied (pyperformance's deepcopy)
  gc.collect(0)      one young collection, with whatever ``gc.callbacks`` are installed
  json.dumps         a control: nothing an agent hooks

Then sleeps ``--idle`` seconds and reports the process's CPU time during the sleep, in
milliseconds of CPU per second: the background cost of the agent's threads while the app idles.
Prints one JSON line: ``ns`` (operation -> ns per call), ``idle_cpu_ms_per_s``, ``agent``.
"""

import time

MAIN_UNIX = time.time()

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import timeit  # noqa: E402

SETUP = """
import copy, gc, json, sys
o = object()
small = {"a": [1, 2, 3], "b": {"c": "d", "e": (5.0, 6.0)}, "f": "text", "g": list(range(10))}
"""

OPERATIONS = {
    "id(obj)": ("id(o)", 2_000_000),
    "sys._getframe()": ("sys._getframe()", 1_000_000),
    "copy.deepcopy(small dict)": ("copy.deepcopy(small)", 40_000),
    "gc.collect(0)": ("gc.collect(0)", 20_000),
    "json.dumps(small dict) [control]": ("json.dumps(small)", 100_000),
}


def agent_running() -> bool:
    api = sys.modules.get("hawkwatch.agent.api")
    return api is not None and api.current_agent() is not None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--idle", type=float, default=2.0, help="seconds of idle to measure")
    parser.add_argument("--scale", type=float, default=1.0, help="multiplier of timeit loops")
    parser.add_argument("--start-agent", action="store_true", help="call hawkwatch.start() first")
    args = parser.parse_args()
    if args.start_agent:
        import hawkwatch

        hawkwatch.start()
    ns: dict[str, float] = {}
    for label, (statement, number) in OPERATIONS.items():
        loops = max(1, int(number * args.scale))
        timer = timeit.Timer(statement, SETUP)
        ns[label] = min(timer.repeat(repeat=5, number=loops)) / loops * 1e9
    before = time.process_time()  # every thread of the process, ns resolution
    time.sleep(args.idle)
    cpu = time.process_time() - before
    print(
        json.dumps(
            {
                "ns": ns,
                "idle_cpu_ms_per_s": cpu / args.idle * 1000,
                "main_unix": MAIN_UNIX,
                "agent": agent_running(),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
