"""How accurately hawkwatch attributes CPU: a known 60/40 split, with py-spy on the same run.

Run: python benchmarks/cpu_accuracy.py [--seconds 20] [--runs 3] [--rate-hz 0,100]

``workloads/cpu_split.py`` spends 60 % of its main thread's CPU in ``f`` and 40 % in ``g``
(measured by the workload itself with ``time.thread_time``: that is the truth), while a thread
``io-blocked`` waits in ``socket.recv`` and a thread ``sleeper`` sleeps. Each run starts it under
``hawkwatch run --profile`` (profiler at ``profiler.rate_hz`` = each value of ``--rate-hz``; 0 is
the default adaptive rate at the default 1 % budget; the high-load trace with episodes from 5 s)
and attaches ``py-spy record --pid … --rate 100 --nonblocking --threads --format raw`` to the
same process before the work starts, so both observe the same execution.

Per tool: ``f`` and ``g`` as a share of the main thread's CPU samples, the error against the
truth in percentage points, and the share of CPU samples given to the two idle threads (should
be 0: they never run). hawkwatch is read through its own readers (``cpu-profile`` windows in cpu
mode, the ``cpu-highload`` episode tree). Needs py-spy (``pip install -e '.[bench]'``) and the
right to ptrace the child (root, or ``kernel.yama.ptrace_scope`` = 0).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from hawkwatch.analysis.calltree import build_profile_tree
from hawkwatch.formats.cpu_profile import read_profiles
from hawkwatch.formats.hawkeye_cpu import read_highload
from hawkwatch.model.profile import CallNode, Frame, frame_label
from hawkwatch.store import list_sessions

HERE = Path(__file__).resolve().parent
WORKLOAD = HERE / "workloads" / "cpu_split.py"
IDLE_THREADS = ("io-blocked", "sleeper")


def split_of(paths: Iterable[tuple[Sequence[str], int]]) -> dict[str, float]:
    """From (thread name, function names outermost first) paths: f and g as shares of the main
    thread's samples, and the idle threads' share of all samples."""
    main = f = g = idle = total = 0
    for names, count in paths:
        thread, funcs = names[0], names[1:]
        total += count
        if thread in IDLE_THREADS:
            idle += count
        if thread != "MainThread":
            continue
        main += count
        if "f" in funcs:
            f += count
        elif "g" in funcs:
            g += count
    return {
        "f": f / main if main else float("nan"),
        "g": g / main if main else float("nan"),
        "idle": idle / total if total else float("nan"),
        "samples": float(main),
    }


def tree_paths(roots: Sequence[CallNode], with_thread: bool) -> list[tuple[list[str], int]]:
    found: list[tuple[list[str], int]] = []
    pending: list[tuple[CallNode, list[str]]] = [
        (root, [] if with_thread else ["MainThread"]) for root in roots
    ]
    while pending:
        node, names = pending.pop()
        here = [*names, _name(node.frame)]
        if node.self_count:
            found.append((here, node.self_count))
        pending.extend((child, here) for child in node.children)
    return found


def _name(frame: Frame) -> str:
    if isinstance(frame, int):
        return frame_label(frame)
    return frame.func.removeprefix("thread ") if not frame.file else frame.func


def pyspy_paths(raw: str) -> list[tuple[list[str], int]]:
    found: list[tuple[list[str], int]] = []
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        parts = stack.split(";")
        thread = parts[0].split(": ", 1)[-1] if parts[0].startswith("thread (") else "?"
        funcs = [p.split(" (", 1)[0] for p in parts[1:]]
        found.append(([thread, *funcs], int(count)))
    return found


def one_run(seconds: float, rate_hz: float, pyspy: str, work: Path) -> dict[str, dict[str, float]]:
    home = work / f"home-{time.monotonic_ns()}"
    go = work / "go"
    go.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    env["HAWKWATCH_HOME"] = str(home)
    hawkwatch = str(Path(sys.executable).with_name("hawkwatch"))
    command = [
        hawkwatch, "run", "--profile",
        "-c", f"profiler.rate_hz={rate_hz}",
        "-c", "profiler.window_s=5",
        "-c", "cpu.highload_min_duration_s=5",
        "--", sys.executable, str(WORKLOAD), "--seconds", str(seconds), "--go-file", str(go),
    ]  # fmt: skip
    app = subprocess.Popen(command, cwd=work, env=env, stdout=subprocess.PIPE, text=True)
    assert app.stdout is not None
    pid = json.loads(app.stdout.readline())["pid"]
    raw = work / "pyspy.txt"
    spy = subprocess.Popen(
        [pyspy, "record", "--pid", str(pid), "--rate", "100", "--nonblocking", "--threads",
         "--format", "raw", "-o", str(raw)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(1.5)  # let py-spy attach and start sampling before the work starts
    go.touch()
    truth_line = app.stdout.read().strip().splitlines()[-1]
    app.wait()
    spy.wait(timeout=60)
    truth = json.loads(truth_line)
    f_truth = truth["f_cpu_s"] / (truth["f_cpu_s"] + truth["g_cpu_s"])
    (session,) = list_sessions(home / "sessions")
    records = session.records().records
    profiles = read_profiles(session.path, records).value
    cpu_tree = build_profile_tree(profiles, "cpu")
    wall_tree = build_profile_tree(profiles, "wall")
    episodes = read_highload(session.path, records, is_hawkwatch=True).value
    result = {
        "truth": {"f": f_truth, "g": 1 - f_truth, "idle": 0.0, "samples": 0.0},
        "hawkwatch profiler (cpu mode)": split_of(tree_paths(cpu_tree.roots, True)),
        "hawkwatch profiler (wall mode)": split_of(tree_paths(wall_tree.roots, True)),
        "py-spy 100 Hz (idle off)": split_of(pyspy_paths(raw.read_text())),
    }
    if episodes:
        longest = max(episodes, key=lambda e: e.lasting_s)
        result["hawkwatch high-load trace"] = split_of(tree_paths(longest.roots, False))
    samples = sum(p.samples for p in profiles)
    duration = sum(p.duration_s for p in profiles)
    result["hawkwatch profiler (cpu mode)"]["rate_hz"] = samples / duration if duration else 0
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rate-hz", default="0,100", help="profiler rates to try; 0 = adaptive")
    args = parser.parse_args()
    pyspy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(pyspy).exists():
        print("cpu_accuracy: py-spy is missing: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    print(
        f"machine: nproc={os.cpu_count()}, Python {platform.python_version()}, {platform.machine()}"
    )
    print(f"command: {' '.join(sys.argv)}")
    worst: dict[str, float] = {}
    idle_worst: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="hw-cpu-accuracy-") as tmp:
        for rate in [float(r) for r in args.rate_hz.split(",")]:
            label = "adaptive, 1 % budget" if rate == 0 else f"fixed {rate:g} Hz"
            for run in range(1, args.runs + 1):
                result = one_run(args.seconds, rate, pyspy, Path(tmp))
                truth = result["truth"]
                rate_seen = result["hawkwatch profiler (cpu mode)"].get("rate_hz", 0)
                print(f"\nrun {run}, hawkwatch profiler {label} (achieved {rate_seen:.1f} Hz), "
                      f"truth f {truth['f'] * 100:.1f} % / g {truth['g'] * 100:.1f} %")  # fmt: skip
                print(f"  {'tool':34} {'f %':>6} {'g %':>6} {'err pp':>7} {'idle %':>7} samples")
                for tool, split in result.items():
                    if tool == "truth":
                        continue
                    error = max(abs(split["f"] - truth["f"]), abs(split["g"] - truth["g"])) * 100
                    shares = f"{split['f'] * 100:6.1f} {split['g'] * 100:6.1f}"
                    idle = split["idle"] * 100
                    print(f"  {tool:34} {shares} {error:7.2f} {idle:7.2f} {split['samples']:7.0f}")
                    key = f"{tool} [{label}]" if tool.startswith("hawkwatch profiler") else tool
                    worst[key] = max(worst.get(key, 0.0), error)
                    idle_worst[key] = max(idle_worst.get(key, 0.0), split["idle"] * 100)
    print("\nworst error over the runs (percentage points) and worst idle-thread share (%):")
    for key, error in worst.items():
        print(f"  {key:58} {error:6.2f} pp   idle {idle_worst[key]:6.2f} %")
    cpu_keys = [k for k in worst if "cpu mode" in k]
    verdict = all(worst[k] <= 5 and idle_worst[k] < 1 for k in cpu_keys)
    print(
        "summary: hawkwatch cpu-mode error "
        + ", ".join(f"{worst[k]:.2f} pp ({k.split('[')[1][:-1]})" for k in cpu_keys)
        + f"; py-spy {worst.get('py-spy 100 Hz (idle off)', float('nan')):.2f} pp; "
        + f"target <= 5 pp and idle threads not busy: {'met' if verdict else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
