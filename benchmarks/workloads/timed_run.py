"""Run a script or ``-m module`` in this process and print its own wall and CPU time as JSON.

Run: python benchmarks/workloads/timed_run.py SCRIPT ARGS… | -m MODULE ARGS…

Interpreter start-up and the agent's start are outside the timed span, so a profiler's
steady-state cost is what the figures show. The last line is ``{"work_s", "work_cpu_s"}``.
"""

import json
import runpy
import sys
import time


def main() -> None:
    argv = sys.argv[1:]
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
    print(json.dumps({"work_s": work_s, "work_cpu_s": work_cpu_s}), flush=True)


if __name__ == "__main__":
    main()
