"""Run a script or ``-m module`` in this process and print its own wall and CPU time as JSON.

Run: python benchmarks/workloads/timed_run.py [--type-tags K] SCRIPT ARGS… | -m MODULE ARGS…

Interpreter start-up and the agent's start are outside the timed span, so a profiler's
steady-state cost is what the figures show. The last line is ``{"work_s", "work_cpu_s"}``
(and ``"type_tags"`` when asked for).

``--type-tags K`` first makes K throwaway classes and looks an attribute up on each, which gives
each a type version tag: the program's own classes then get tags K higher. CPython finds a
class attribute through a 4096-entry cache indexed by (version tag XOR the name's address), so
which of a program's hot lookups collide there — and miss on every call — depends on how many
tags were handed out before its classes got theirs. Anything that runs first (an agent, one more
import) moves that, by luck for better or worse: on pyperformance's ``richards`` one tag more or
less changed the instructions of a loop by −2 to +4 % under callgrind. Drawing K at random per
run averages that luck out of an A/B comparison instead of charging it to one arm.
"""

import json
import runpy
import sys
import time


def shift_type_tags(count: int) -> list[type]:
    """Hand out ``count`` type version tags (keep the classes alive: a tag is not reused)."""
    classes = [type(f"TagShift{i}", (), {}) for i in range(count)]
    for cls in classes:
        getattr(cls, "absent", None)  # a type-cache lookup assigns the class its version tag
    return classes


def main() -> None:
    argv = sys.argv[1:]
    tags = None
    if argv[:1] == ["--type-tags"]:
        tags, argv = int(argv[1]), argv[2:]
    keep = shift_type_tags(tags or 0)
    start, start_cpu = time.perf_counter(), time.process_time()
    try:
        if argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = argv
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0, 1):
            raise
    work_s, work_cpu_s = time.perf_counter() - start, time.process_time() - start_cpu
    sys.stdout.flush()
    result: dict[str, float] = {"work_s": work_s, "work_cpu_s": work_cpu_s}
    if tags is not None:
        result["type_tags"] = len(keep)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
