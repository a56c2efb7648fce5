"""Run a script or ``-m module`` in this process and print its own wall and CPU time as JSON.

Run: python benchmarks/workloads/timed_run.py [--layout K,P] SCRIPT ARGS… | -m MODULE ARGS…

Interpreter start-up and the agent's start are outside the timed span, so a profiler's
steady-state cost is what the figures show. The last line is ``{"work_s", "work_cpu_s"}``
(and ``"layout"`` when asked for), and on Linux the main thread's scheduler figures over the span
(``"main"``: seconds on a CPU and waiting for one, from ``/proc/thread-self/schedstat``; voluntary
and involuntary context switches, from its ``status``): time in neither is time the thread was
stopped or asleep — ``pyspy_pause.py`` reads py-spy's pauses from it.

``--layout K,P`` first makes K throwaway classes and looks an attribute up on each, which gives
each a type version tag, and keeps P small strings alive. CPython finds a class attribute
through a 4096-entry cache indexed by the class's version tag XOR the attribute name's address,
so which of a program's hot lookups collide there — and miss on every call — depends on how many
tags were handed out before its classes got theirs and on where its strings landed. Anything
that runs first (an agent, one more import, one object made during start-up) moves both, by
luck for better or worse: on pyperformance's ``richards`` under callgrind, a loop's instructions
moved by up to 9 % between layouts of plain ``hawkwatch run``. Drawing K and P at random per run
spreads that luck over every arm of an A/B comparison instead of charging it to one.
"""

import json
import runpy
import sys
import time


def main_thread_figures() -> list[float]:
    """[on-CPU s, run-queue s, voluntary, involuntary switches] of the calling thread (Linux)."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            run_ns, wait_ns = (int(x) for x in f.read().split()[:2])
        with open("/proc/thread-self/status") as f:
            fields = dict(line.split(":", 1) for line in f if "ctxt_switches" in line)
    except OSError:
        return []
    return [run_ns / 1e9, wait_ns / 1e9, int(fields["voluntary_ctxt_switches"]),
            int(fields["nonvoluntary_ctxt_switches"])]  # fmt: skip


def shift_layout(tags: int, strings: int) -> list[object]:
    """Hand out ``tags`` type version tags and allocate ``strings`` small strings (both kept
    alive: a tag is not reused, and freed blocks would be handed out again first)."""
    classes = [type(f"TagShift{i}", (), {}) for i in range(tags)]
    for cls in classes:
        getattr(cls, "absent", None)  # a type-cache lookup assigns the class its version tag
    return [*classes, *(str(i) * 2 for i in range(strings))]


def main() -> None:
    argv = sys.argv[1:]
    layout = None
    if argv[:1] == ["--layout"]:
        tags, _, strings = argv[1].partition(",")
        layout, argv = (int(tags), int(strings or 0)), argv[2:]
    keep = shift_layout(*(layout or (0, 0)))
    before = main_thread_figures()
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
    after = main_thread_figures()
    sys.stdout.flush()
    result: dict[str, object] = {"work_s": work_s, "work_cpu_s": work_cpu_s}
    if before and after:
        result["main"] = [b - a for a, b in zip(before, after, strict=True)]
    if layout is not None:
        result["layout"] = [*layout, len(keep)]
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
