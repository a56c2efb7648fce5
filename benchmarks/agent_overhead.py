"""What the agent's default monitors cost a host program: CPU-bound, asyncio HTTP, start-up.

Run: python benchmarks/agent_overhead.py [--pairs 7] [--http-pairs 21] [--quick]
         [--sections startup,hot,cpu,http] [--arms plain,run,off,start,aa] [--app-imports]

Every workload runs as its own process, in five ways ("arms"), with this interpreter
(``sys.executable``) and the ``hawkwatch`` script next to it:

  plain   python WORKLOAD                                   the baseline
  run     hawkwatch run -- python WORKLOAD                  default monitors, supervisor and
                                                            sitecustomize: what issue #3 asks about
  off     HAWKWATCH_ENABLED=false hawkwatch run -- ...      supervisor and bootstrap, no agent
  start   python WORKLOAD --start-agent                     ``hawkwatch.start()`` in the code
  aa      python WORKLOAD                                   plain again: an A/A control whose
                                                            "overhead" is the noise floor

Per BENCHMARKS.md the arms alternate in one run: a warm-up round, then ``--pairs`` rounds of every
arm once (the order rotates each round, so no arm always follows another). Each figure is the
median of the per-round ratios against ``plain`` of the same round, with min and max and a
distribution-free confidence interval of that median; the verdict is "met" only when the
interval's upper end is <= 1 %. Every process checks that an agent runs exactly in the arms that
should have one. Sessions go to a temporary ``HAWKWATCH_HOME`` (working folder beside it, so no
``pyproject.toml`` is found); every other ``HAWKWATCH_*`` variable is removed.

Sections:
  startup  ``python -c`` that prints time.time() at its first statement: whole-process wall time
           and spawn-to-main time per arm, ``hawkwatch run`` against ``hawkwatch.start()`` in
           code, the goal of issue #13 (at most 50 ms added per process start), the peers
           py-spy and pyinstrument when installed (``.[bench]``; py-spy cannot attach to a
           program this short and is left out when it fails), and what the agent's imports cost
           (``python -X importtime``: the modules an in-code start adds).
  hot      ``workloads/hot_paths.py``: ns per call of interpreter paths the agent hooks, and the
           CPU the idle process burns per second (the agent's threads).
  records  in this process: writing records through the typed model (``model.records``) against
           the dict + ``json.dumps`` path the agent used before, same values, alternated
           (``record_encoding.py``, which also runs alone).
  cpu      ``workloads/cpu_mix.py``: seven pyperformance-like kernels, ~4 s; the workload's own
           perf_counter around the work, per kernel, and the whole process's wall time. With
           ``--app-imports`` every arm first imports the standard modules a typical service has
           loaded anyway (logging, dataclasses, typing, pathlib, ...): this small script has a
           small GC heap, so the ~9k objects those modules add make each full collection
           slower; with them loaded in all arms, what remains is the monitors' own cost.
  http     ``workloads/asyncio_http.py`` (asyncio streams, keep-alive) under a fixed closed-loop
           load from ``workloads/http_load.py`` in a second process: requests/s, p50/p99 latency
           and the server's CPU per request. Each round starts one server per arm; the load
           generator loads them one at a time in alternating slices (A B C D, B C D A, ...), so
           the noise of a shared machine, which comes and goes within seconds, hits all alike.
           A server process's speed also differs by up to ±10 % from one process to the next
           (memory layout, hash seed, where it is scheduled) and keeps that speed, so HTTP uses
           more, shorter rounds (``--http-pairs``, default 3 × ``--pairs``).

By default ``.pyc`` files go to a temporary folder (``PYTHONPYCACHEPREFIX``), so start-up is
measured as for an installed package even where ``PYTHONDONTWRITEBYTECODE`` is set; the warm-up
round fills it. ``--no-bytecode-cache`` keeps the environment as it is.

Overhead = (time with the agent) / (time without) - 1; for HTTP the time is 1 / throughput. The
target (issue #3) is <= 1 %, Datadog's profiler budget.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import select
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any

import record_encoding
from _paired_stats import median_interval

HERE = Path(__file__).resolve().parent
WORKLOADS = HERE / "workloads"
CPU_MIX = WORKLOADS / "cpu_mix.py"
HTTP_SERVER = WORKLOADS / "asyncio_http.py"
HTTP_LOAD = WORKLOADS / "http_load.py"
HOT_PATHS = WORKLOADS / "hot_paths.py"
TARGET = 0.01  # issue #3: overhead <= 1 %
STARTUP_TARGET_MS = 50.0  # issue #13: at most 50 ms added per process start
TIMEOUT_S = 300.0
ALL_SECTIONS = ("startup", "hot", "records", "cpu", "http")

# The ``-c`` program of the start-up section: prints when main started, when it was ready (after
# an in-code start of the agent, if any) and whether an agent runs.
STARTUP_CODE = (  # one write: a peer sharing stdout (py-spy) cannot split the line
    "import time; t0 = time.time(){extra}; import sys; "
    "a = sys.modules.get('hawkwatch.agent.api'); "
    "sys.stdout.write(f'{{t0}} {{time.time()}} {{bool(a and a.current_agent())}}\\n')"
)
TIMING_LINE = re.compile(r"(\d+\.\d+) (\d+\.\d+) (True|False)")
STARTUP_IN_CODE = "; import hawkwatch; hawkwatch.start()"


# -- arms ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Arm:
    name: str
    label: str
    agent: bool  # whether an agent must be running in the workload
    supervised: bool  # started through ``hawkwatch run``
    env: dict[str, str] = field(default_factory=dict)
    in_code: bool = False  # the workload starts the agent itself (``--start-agent``)
    peer: str = ""  # a peer tool that runs the program: "py-spy" or "pyinstrument"

    def command(self, python_argv: list[str]) -> list[str]:
        """The argv for ``python_argv`` (``[python, script, args...]``) under this arm."""
        if self.supervised:
            return [*hawkwatch_script(), "run", "--", *python_argv]
        if self.peer == "py-spy":  # samples from outside at its default 100 Hz
            out = os.path.join(tempfile.gettempdir(), f"hw-bench-pyspy-{os.getpid()}.txt")
            return [peer_script("py-spy"), "record", "-f", "raw", "-o", out, "--", *python_argv]
        if self.peer == "pyinstrument":  # its own command runs the program: same arguments
            out = os.path.join(tempfile.gettempdir(), f"hw-bench-pyinstrument-{os.getpid()}.txt")
            return [peer_script("pyinstrument"), "-o", out, *python_argv[1:]]
        return python_argv


ARMS = (
    Arm("plain", "python (no agent)", agent=False, supervised=False),
    Arm("run", "hawkwatch run", agent=True, supervised=True),
    Arm("off", "hawkwatch run, ENABLED=false", False, True, {"HAWKWATCH_ENABLED": "false"}),
    Arm("start", "hawkwatch.start() in code", agent=True, supervised=False, in_code=True),
    Arm("aa", "python again (A/A control)", agent=False, supervised=False),
)
ARM = {arm.name: arm for arm in ARMS}


PEERS = (  # start-up only: what the CPU profilers the issue compares with cost per start
    Arm("pyspy", "py-spy record (peer)", agent=False, supervised=False, peer="py-spy"),
    Arm("pyinstrument", "pyinstrument (peer)", False, False, peer="pyinstrument"),
)


def peer_script(name: str) -> str:
    """The peer's command next to this interpreter (``pip install -e '.[bench]'``), or ""."""
    script = Path(sys.executable).parent / name
    return str(script) if script.exists() else ""


def hawkwatch_script() -> list[str]:
    script = Path(sys.executable).parent / "hawkwatch"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "hawkwatch"]


@dataclass(frozen=True)
class Setup:
    """What every process of the benchmark runs with."""

    env: dict[str, str]
    cwd: Path


def make_setup(home: Path, bytecode_cache: bool) -> Setup:
    """A clean environment: sessions in ``home``, default options, a neutral working folder.

    With ``bytecode_cache`` the ``.pyc`` files go to a folder in ``home``
    (``PYTHONPYCACHEPREFIX``), so that after the warm-up imports read bytecode, as from an
    installed package, even where ``PYTHONDONTWRITEBYTECODE`` is set and without writing into
    the source tree.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    env["HAWKWATCH_HOME"] = str(home)
    for name in ("PYTHONDEVMODE", "PYTHONTRACEMALLOC", "PYTHONPROFILEIMPORTTIME"):
        env.pop(name, None)
    if bytecode_cache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(home / "pycache")
    cwd = home / "cwd"  # no hawkwatch.toml or pyproject.toml here or above (a temp folder)
    cwd.mkdir(exist_ok=True)
    return Setup(env, cwd)


def rounds(arms: Sequence[Arm], pairs: int) -> list[tuple[int, list[Arm]]]:
    """Round 0 is the warm-up; the order of arms rotates every round."""
    out = []
    for index in range(pairs + 1):
        shift = index % len(arms)
        out.append((index, [*arms[shift:], *arms[:shift]]))
    return out


# -- running one process ---------------------------------------------------------------------


@dataclass
class Finished:
    stdout: str
    stderr: str
    wall_s: float
    spawn_unix: float
    cpu_s: float = 0.0  # user + system CPU of the process and the children it waited for


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_process(argv: list[str], setup: Setup, arm: Arm) -> Finished:
    spawn_unix = time.time()
    cpu_before = _children_cpu()
    started = time.perf_counter()
    proc = subprocess.run(
        argv,
        env=setup.env | arm.env,
        cwd=setup.cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    wall = time.perf_counter() - started
    cpu = _children_cpu() - cpu_before
    if proc.returncode != 0:
        raise RuntimeError(
            f"{shlex.join(argv)} exited with {proc.returncode}:\n{proc.stderr[-2000:]}"
        )
    return Finished(proc.stdout, proc.stderr, wall, spawn_unix, cpu)


def last_json(text: str) -> dict[str, Any]:
    """The workload's result: the last line of its output that is a JSON object."""
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            result: dict[str, Any] = json.loads(line)
            return result
    raise RuntimeError(f"no JSON result in the output:\n{text[-2000:]}")


def check_agent(arm: Arm, seen: object, what: str, stderr: str = "") -> None:
    """Refuse to measure an arm whose agent is not in the state the arm is about."""
    if bool(seen) != arm.agent:
        state = "running" if seen else "not running"
        raise RuntimeError(
            f"{what}: arm {arm.name!r} expects the agent {'running' if arm.agent else 'off'}, "
            f"it was {state}; the process's stderr:\n{stderr[-3000:]}"
        )


def workload_argv(arm: Arm, script: Path, args: list[str]) -> list[str]:
    extra = ["--start-agent"] if arm.in_code else []
    return arm.command([sys.executable, str(script), *args, *extra])


# -- statistics ------------------------------------------------------------------------------


@dataclass
class Ratios:
    values: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    def pct(self) -> str:
        return f"{pct(self.median)} ({pct(min(self.values))} .. {pct(max(self.values))})"

    def median_ci(self, level: float = 0.95) -> tuple[float, float, float]:
        """A distribution-free confidence interval of the median: (low, high, coverage)."""
        return median_interval(self.values, level)

    def ci_text(self) -> str:
        low, high, coverage = self.median_ci()
        return f"{coverage * 100:.0f} % CI of the median {pct(low)} .. {pct(high)}"


def pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f} %"


def ratios(
    samples: dict[str, list[dict[str, float]]],
    arm: str,
    metric: Callable[[dict[str, float]], float],
) -> Ratios:
    """Per-round ratio metric(arm) / metric(plain)."""
    return Ratios(
        [metric(a) / metric(p) for a, p in zip(samples[arm], samples["plain"], strict=True)]
    )


def deltas(
    samples: dict[str, list[dict[str, float]]],
    arm: str,
    metric: Callable[[dict[str, float]], float],
) -> list[float]:
    return [metric(a) - metric(p) for a, p in zip(samples[arm], samples["plain"], strict=True)]


def med(values: Sequence[float]) -> float:
    return statistics.median(values)


# -- sections --------------------------------------------------------------------------------


def section_startup(
    arms: Sequence[Arm], n_rounds: int, setup: Setup, importtime_runs: int
) -> dict[str, float]:
    """Whole-process wall time and spawn-to-main of an empty ``-c`` program, per arm.

    Besides the arms: ``python -c 'import hawkwatch'``, and the peers (py-spy, pyinstrument)
    when they are installed. The goal (issue #13): at most 50 ms added per process start, for
    ``hawkwatch run`` and for ``hawkwatch.start()`` in code.
    """
    peers = [peer for peer in PEERS if peer_script(peer.peer)]
    startup_arms = [*arms, Arm("import", "python -c 'import hawkwatch'", False, False), *peers]
    samples: dict[str, list[dict[str, float]]] = {arm.name: [] for arm in startup_arms}
    for index, order in rounds(startup_arms, n_rounds):
        for arm in order:
            if arm not in startup_arms:
                continue  # a peer that could not run this program
            if arm.name == "import":
                code = STARTUP_CODE.format(extra="; import hawkwatch")
            else:
                code = STARTUP_CODE.format(extra=STARTUP_IN_CODE if arm.in_code else "")
            try:
                done = run_process(arm.command([sys.executable, "-c", code]), setup, arm)
            except RuntimeError as exc:
                if not arm.peer:
                    raise
                print(f"  {arm.peer} left out: {str(exc).splitlines()[-1][:160]}")
                startup_arms.remove(arm)
                peers.remove(arm)
                continue
            # the program's own line: the last one of three fields (a peer may print more)
            found = TIMING_LINE.findall(done.stdout)
            if not found:
                raise RuntimeError(f"{arm.name}: no timing line in {done.stdout[-500:]!r}")
            t_main, t_ready, running = found[-1]
            check_agent(arm, running == "True", "start-up", done.stderr)
            if index:
                samples[arm.name].append(
                    {
                        "wall": done.wall_s,
                        "cpu": done.cpu_s,
                        "main": float(t_main) - done.spawn_unix,
                        "ready": float(t_ready) - done.spawn_unix,
                    }
                )

    print(f"\n## start-up: python -c '…' ({n_rounds} rounds after a warm-up; ms, medians)")
    print(
        f"{'arm':<30} {'wall':>8} {'Δ wall':>8} {'CPU':>7} {'Δ CPU':>7} {'to main':>8} "
        f"{'Δ main':>8} {'to ready':>9} {'Δ ready':>8}"
    )
    out: dict[str, float] = {}
    for arm in startup_arms:
        rows = samples[arm.name]
        wall = med([r["wall"] for r in rows]) * 1e3
        cpu = med([r["cpu"] for r in rows]) * 1e3
        main_ms = med([r["main"] for r in rows]) * 1e3
        ready = med([r["ready"] for r in rows]) * 1e3
        d_wall = med(deltas(samples, arm.name, lambda r: r["wall"])) * 1e3
        d_cpu = med(deltas(samples, arm.name, lambda r: r["cpu"])) * 1e3
        d_main = med(deltas(samples, arm.name, lambda r: r["main"])) * 1e3
        d_ready = med(deltas(samples, arm.name, lambda r: r["ready"])) * 1e3
        print(
            f"{arm.label:<30} {wall:>8.1f} {d_wall:>+8.1f} {cpu:>7.1f} {d_cpu:>+7.1f} "
            f"{main_ms:>8.1f} {d_main:>+8.1f} {ready:>9.1f} {d_ready:>+8.1f}"
        )
        out[f"{arm.name}_wall_ms"] = d_wall
        out[f"{arm.name}_cpu_ms"] = d_cpu
        out[f"{arm.name}_main_ms"] = d_main
        out[f"{arm.name}_ready_ms"] = d_ready
    print(
        "  to main: spawn to the first statement of the program; to ready: after the in-code "
        "start, if any; CPU: user + system of the process and its children (the supervisor's "
        "included), which a loaded machine does not stretch as it stretches wall time; Δ: median "
        "of per-round differences from plain"
    )
    added = {name: out[f"{name}_wall_ms"] for name in ("run", "start") if f"{name}_wall_ms" in out}
    if "run" in added and "start" in added:
        versus = med(
            [
                (r["wall"] - s["wall"]) * 1e3
                for r, s in zip(samples["run"], samples["start"], strict=True)
            ]
        )
        print(
            f"  hawkwatch run vs hawkwatch.start() in code: {versus:+.1f} ms per start (the "
            "supervisor: its own interpreter, the child's spawn, the exit-state it writes)"
        )
    for name, ms in added.items():
        cpu_ms = out[f"{name}_cpu_ms"]
        verdict = "met" if ms <= STARTUP_TARGET_MS else "NOT met"
        verdict += f" on wall time; +{cpu_ms:.0f} ms of CPU"
        peer_ms = {p.peer: out[f"{p.name}_wall_ms"] for p in peers if out[f"{p.name}_wall_ms"] > 0}
        peer_text = "; ".join(f"{ms / v:.1f}× {peer}'s +{v:.0f}" for peer, v in peer_ms.items())
        print(
            f"  {ARM[name].label}: +{ms:.0f} ms per process start, goal <= "
            f"{STARTUP_TARGET_MS:g} ms: {verdict}" + (f" ({peer_text} ms)" if peer_text else "")
        )

    # What the agent imports: every module loaded by an in-code start that a bare interpreter
    # does not load (their self times summed), and the largest of them.
    program = "import hawkwatch; hawkwatch.start()"
    totals: list[float] = []
    selfs: dict[str, list[float]] = {}
    for _ in range(importtime_runs):
        baseline = set(_importtime(setup, "pass"))
        loaded = _importtime(setup, program)
        own = {name: us for name, us in loaded.items() if name not in baseline}
        totals.append(sum(own.values()))
        for name, us in own.items():
            selfs.setdefault(name, []).append(us)
    total_ms = med(totals) / 1e3 if totals else float("nan")
    top = sorted(selfs.items(), key=lambda kv: -med(kv[1]))[:10]
    print(
        f"python -X importtime -c '{program}': {total_ms:.1f} ms in the modules it adds to a "
        f"bare interpreter's (median of {importtime_runs}); largest self times:"
    )
    print("  " + ", ".join(f"{name} {med(v) / 1e3:.1f}" for name, v in top) + " (ms)")
    out["import_ms"] = total_ms
    return out


def _importtime(setup: Setup, program: str) -> dict[str, int]:
    """Module -> self time (µs) from ``python -X importtime -c program``."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", program],
        env=setup.env,
        cwd=setup.cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=True,
    )
    found: dict[str, int] = {}
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if m:
            found[m[4]] = int(m[1])
    return found


def section_hot(arms: Sequence[Arm], n_rounds: int, setup: Setup, quick: bool) -> None:
    """ns per call of hooked interpreter paths, and idle CPU, per arm."""
    samples: dict[str, list[dict[str, float]]] = {arm.name: [] for arm in arms}
    args = ["--idle", "0.5", "--scale", "0.1"] if quick else ["--idle", "2.0", "--scale", "0.5"]
    for index, order in rounds(arms, n_rounds):
        for arm in order:
            done = run_process(workload_argv(arm, HOT_PATHS, args), setup, arm)
            result = last_json(done.stdout)
            check_agent(arm, result["agent"], "hot paths", done.stderr)
            if index:
                row: dict[str, float] = dict(result["ns"])
                row["idle"] = float(result["idle_cpu_ms_per_s"])
                samples[arm.name].append(row)
    print(f"\n## hot paths: {HOT_PATHS.name} ({n_rounds} rounds after a warm-up; medians)")
    names = [k for k in samples["plain"][0] if k != "idle"]
    header = f"{'operation (ns per call)':<34}" + "".join(f"{a.name:>16}" for a in arms)
    print(header)
    for name in names:
        cells = []
        for arm in arms:
            value = med([r[name] for r in samples[arm.name]])
            if arm.name == "plain":
                cells.append(f"{value:>16.0f}")
            else:
                ratio = ratios(samples, arm.name, itemgetter(name)).median
                cells.append(f"{value:>8.0f} {pct(ratio):>7}")
        print(f"{name:<34}" + "".join(cells))
    cells = [f"{med([r['idle'] for r in samples[a.name]]):>16.2f}" for a in arms]
    print(f"{'idle: CPU ms per second':<34}" + "".join(cells))


def section_cpu(
    arms: Sequence[Arm], pairs: int, setup: Setup, scale: float, app_imports: bool = False
) -> dict[str, Ratios]:
    samples: dict[str, list[dict[str, float]]] = {arm.name: [] for arm in arms}
    args = ["--scale", f"{scale:g}", *(["--app-imports"] if app_imports else [])]
    gc_counts: dict[str, list[list[int]]] = {arm.name: [] for arm in arms}
    for index, order in rounds(arms, pairs):
        for arm in order:
            done = run_process(workload_argv(arm, CPU_MIX, args), setup, arm)
            result = last_json(done.stdout)
            check_agent(arm, result["agent"], "cpu-bound", done.stderr)
            label = "warm-up" if index == 0 else f"round {index}"
            print(
                f"  {label:>8} {arm.name:<6} work {result['work_s']:.3f} s  "
                f"wall {done.wall_s:.3f} s",
                flush=True,
            )
            if index:
                row = {
                    "work": float(result["work_s"]),
                    "wall": done.wall_s,
                    "main": float(result["main_unix"]) - done.spawn_unix,
                    "start": float(result["agent_start_s"]),
                    "import": float(result["agent_import_s"]),
                }
                row.update({f"k:{k}": v for k, v in result["kernels"].items()})
                samples[arm.name].append(row)
                gc_counts[arm.name].append(result["gc_collections"])

    flag = " --app-imports" if app_imports else ""
    print(
        f"\n## cpu-bound: {CPU_MIX.name} --scale {scale:g}{flag} ({pairs} rounds after a warm-up; "
        "Δ = median of per-round ratios vs plain, (min .. max))"
    )
    print(
        f"{'arm':<30} {'work s':>7} {'Δ work (in-process timer)':>28} {'wall s':>7} "
        f"{'Δ wall (whole process)':>26} {'to main ms':>10}"
    )
    out: dict[str, Ratios] = {}
    for arm in arms:
        rows = samples[arm.name]
        work = med([r["work"] for r in rows])
        wall = med([r["wall"] for r in rows])
        main_ms = med([r["main"] for r in rows]) * 1e3
        if arm.name == "plain":
            print(f"{arm.label:<30} {work:>7.3f} {'':>28} {wall:>7.3f} {'':>26} {main_ms:>10.1f}")
            continue
        r_work = ratios(samples, arm.name, lambda r: r["work"])
        r_wall = ratios(samples, arm.name, lambda r: r["wall"])
        out[f"{arm.name}_work"], out[f"{arm.name}_wall"] = r_work, r_wall
        print(
            f"{arm.label:<30} {work:>7.3f} {r_work.pct():>28} {wall:>7.3f} {r_wall.pct():>26} "
            f"{main_ms:>10.1f}"
        )
    for arm in arms[1:]:
        print(f"  {arm.name}: work {out[f'{arm.name}_work'].ci_text()}")
    if "start" in samples:
        rows = samples["start"]
        print(
            f"  in-code start: import hawkwatch {med([r['import'] for r in rows]) * 1e3:.1f} ms, "
            f"hawkwatch.start() {med([r['start'] for r in rows]) * 1e3:.1f} ms (medians)"
        )
    print(
        "  GC collections during the work (gen0/gen1/gen2, median of rounds): "
        + ", ".join(
            f"{arm.name} "
            + "/".join(f"{med(gen):.0f}" for gen in zip(*gc_counts[arm.name], strict=True))
            for arm in arms
        )
    )

    kernels = [k for k in samples["plain"][0] if k.startswith("k:")]
    print(
        "\nper kernel (a full collection lands in whichever kernel is running when it is due, and "
        "the agent's own objects move that point, so GC time can shift between kernels):"
    )
    print(
        f"\n{'kernel (Δ work, median of rounds)':<34} {'plain s':>8}"
        + "".join(f"{a.name:>10}" for a in arms if a.name != "plain")
    )
    for kernel in kernels:
        plain_s = med([r[kernel] for r in samples["plain"]])
        cells = [
            f"{pct(ratios(samples, a.name, itemgetter(kernel)).median):>10}"
            for a in arms
            if a.name != "plain"
        ]
        print(f"{kernel[2:]:<34} {plain_s:>8.3f}" + "".join(cells))
    return out


@dataclass
class HttpLoad:
    requests: int
    slices: int
    warmup: int
    connections: int
    pin: bool  # servers on the first usable CPU, the load generator on the second


@contextmanager
def pinned_to(cpu_index: int, enabled: bool) -> Iterator[None]:
    """Pin this process to one usable CPU meanwhile, so that processes started inherit it."""
    if not enabled or not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        yield
        return
    usable = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {sorted(usable)[cpu_index % len(usable)]})
    try:
        yield
    finally:
        os.sched_setaffinity(0, usable)


def run_http_round(
    order: Sequence[Arm], setup: Setup, load: HttpLoad
) -> tuple[dict[str, dict[str, float]], dict[str, list[float]]]:
    """Start one server per arm, load them in alternating slices, stop them; rows by arm."""
    servers: list[tuple[Arm, subprocess.Popen[str]]] = []
    ports: list[str] = []
    client: subprocess.Popen[str] | None = None
    try:
        for arm in order:
            with pinned_to(0, load.pin):
                server = subprocess.Popen(
                    workload_argv(arm, HTTP_SERVER, []),
                    env=setup.env | arm.env,
                    cwd=setup.cwd,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            servers.append((arm, server))
            assert server.stdout is not None
            ready, _, _ = select.select([server.stdout], [], [], 60.0)
            line = server.stdout.readline() if ready else ""
            if not line.startswith("LISTENING "):
                raise RuntimeError(f"the {arm.name} server did not start: {line!r}")
            ports.append(line.split()[1])
        with pinned_to(1, load.pin):
            client = subprocess.Popen(
                [
                    sys.executable,
                    str(HTTP_LOAD),
                    *(arg for port in ports for arg in ("--port", port)),
                    "--requests",
                    str(load.requests),
                    "--slices",
                    str(load.slices),
                    "--warmup",
                    str(load.warmup),
                    "--connections",
                    str(load.connections),
                ],
                env=setup.env,
                cwd=setup.cwd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        client_out, client_err = client.communicate(timeout=TIMEOUT_S)
        if client.returncode != 0:
            raise RuntimeError(f"the load generator exited {client.returncode}: {client_err}")
        outputs = [server.communicate(timeout=60.0) for _, server in servers]
    finally:
        for process in [*(server for _, server in servers), *([client] if client else [])]:
            if process.poll() is None:
                process.kill()
                process.wait()
    measured = last_json(client_out)["servers"]
    rows: dict[str, dict[str, float]] = {}
    slices: dict[str, list[float]] = {}
    for (arm, server), (out, err), result in zip(
        servers,
        outputs,
        measured,
        strict=True,
    ):
        if server.returncode != 0:
            raise RuntimeError(f"the {arm.name} server exited {server.returncode}: {err[-2000:]}")
        served = last_json(out)
        check_agent(arm, served["agent"], "asyncio http", err)
        if result["errors"]:
            raise RuntimeError(f"{result['errors']} HTTP errors from the {arm.name} server")
        rows[arm.name] = {
            "rps": float(result["rps"]),
            "p50": float(result["p50_ms"]),
            "p99": float(result["p99_ms"]),
            "cpu_us": float(served["cpu_s"]) / int(served["requests"]) * 1e6,
        }
        slices[arm.name] = [float(x) for x in result["slice_rps"]]
    return rows, slices


def section_http(
    arms: Sequence[Arm], pairs: int, setup: Setup, load: HttpLoad
) -> dict[str, Ratios]:
    samples: dict[str, list[dict[str, float]]] = {arm.name: [] for arm in arms}
    slice_ratios: dict[str, list[float]] = {arm.name: [] for arm in arms}
    for index, order in rounds(arms, pairs):
        by_arm, slices = run_http_round(order, setup, load)
        if index:
            for arm in arms:
                slice_ratios[arm.name].extend(
                    p / a for a, p in zip(slices[arm.name], slices["plain"], strict=True)
                )
        label = "warm-up" if index == 0 else f"round {index}"
        for arm in order:
            row = by_arm[arm.name]
            print(
                f"  {label:>8} {arm.name:<6} {row['rps']:8.0f} req/s  p50 {row['p50']:.2f} ms  "
                f"p99 {row['p99']:.2f} ms  server CPU {row['cpu_us']:.0f} µs/req",
                flush=True,
            )
            if index:
                samples[arm.name].append(row)

    print(
        f"\n## asyncio http: {HTTP_SERVER.name} under {HTTP_LOAD.name} --requests "
        f"{load.requests} --slices {load.slices} --warmup {load.warmup} --connections "
        f"{load.connections} per server ({pairs} rounds after a warm-up; Δ = median of per-round "
        "ratios vs plain, (min .. max)); CPU µs/req: the server's CPU from listening to shutdown, "
        "its idle time while the other servers were loaded included"
    )
    print(
        f"{'arm':<30} {'req/s':>7} {'Δ time per request':>24} {'per slice':>9} {'p50 ms':>7} "
        f"{'Δ p50':>8} {'p99 ms':>7} {'Δ p99':>8} {'CPU µs/req':>10} {'Δ CPU':>8}"
    )
    out: dict[str, Ratios] = {}
    for arm in arms:
        rows = samples[arm.name]
        rps = med([r["rps"] for r in rows])
        p50 = med([r["p50"] for r in rows])
        p99 = med([r["p99"] for r in rows])
        cpu = med([r["cpu_us"] for r in rows])
        if arm.name == "plain":
            print(
                f"{arm.label:<30} {rps:>7.0f} {'':>24} {'':>9} {p50:>7.2f} {'':>8} {p99:>7.2f} "
                f"{'':>8} {cpu:>10.1f}"
            )
            continue
        r_time = ratios(samples, arm.name, lambda r: 1 / r["rps"])
        r_p50 = ratios(samples, arm.name, lambda r: r["p50"])
        r_p99 = ratios(samples, arm.name, lambda r: r["p99"])
        r_cpu = ratios(samples, arm.name, lambda r: r["cpu_us"])
        out[f"{arm.name}_time"], out[f"{arm.name}_p99"] = r_time, r_p99
        out[f"{arm.name}_p50"], out[f"{arm.name}_cpu"] = r_p50, r_cpu
        out[f"{arm.name}_slices"] = Ratios(slice_ratios[arm.name])
        print(
            f"{arm.label:<30} {rps:>7.0f} {r_time.pct():>24} "
            f"{pct(out[f'{arm.name}_slices'].median):>9} {p50:>7.2f} "
            f"{pct(r_p50.median):>8} {p99:>7.2f} {pct(r_p99.median):>8} {cpu:>10.1f} "
            f"{pct(r_cpu.median):>8}"
        )
    for arm in arms[1:]:
        print(f"  {arm.name}: time per request {out[f'{arm.name}_time'].ci_text()}")
    n_slices = len(slice_ratios["plain"])
    print(
        f"  per slice: median over all {n_slices} slices of the time-per-request ratio to the "
        "plain server's slice of the same turn (neighbours in time)"
    )
    return out


# -- main ------------------------------------------------------------------------------------


def machine_lines(argv: list[str]) -> list[str]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    version = subprocess.run(
        [*hawkwatch_script(), "--version"], capture_output=True, text=True, check=False
    ).stdout.strip()
    commit = subprocess.run(
        ["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(HERE), "status", "--porcelain", "--", "../src"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.splitlines()
    if commit and dirty:
        commit += f" + {len(dirty)} uncommitted file(s) in src/"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return [
        f"machine: nproc={os.cpu_count()} (usable {affinity}), {model or platform.machine()}, "
        f"{platform.platform()}; load average {load}",
        f"python: {platform.python_implementation()} {platform.python_version()} "
        f"({sys.executable})",
        f"agent: {version or 'hawkwatch ?'} (git {commit or '?'}), "
        f"script {shlex.join(hawkwatch_script())}",
        f"command: {shlex.join(argv)}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--pairs", type=int, help="measured rounds per workload (default 7; 3 quick)"
    )
    parser.add_argument("--http-pairs", type=int, help="measured HTTP rounds (default 3 x --pairs)")
    parser.add_argument("--quick", action="store_true", help="smoke run, about a minute")
    parser.add_argument(
        "--sections",
        default=",".join(ALL_SECTIONS),
        help=f"comma-separated subset of {','.join(ALL_SECTIONS)} (default: all)",
    )
    parser.add_argument("--scale", type=float, help="cpu_mix work scale (default 1.0; 0.25 quick)")
    parser.add_argument(
        "--app-imports",
        action="store_true",
        help="cpu-bound: every arm first imports the stdlib modules a typical service has loaded,"
        " so the agent's own cost is measured apart from what importing them adds to the GC heap",
    )
    parser.add_argument(
        "--requests",
        type=int,
        help="timed HTTP requests per server and round (default 5000; 2000 quick)",
    )
    parser.add_argument("--connections", type=int, default=16, help="HTTP keep-alive connections")
    parser.add_argument(
        "--slices", type=int, help="alternating HTTP load slices (default 5; 4 quick)"
    )
    parser.add_argument(
        "--pin",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="HTTP: servers on one CPU, the load generator on the other (default: off; it "
        "did not lower the A/A noise on the 2-vCPU VM)",
    )
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="keep PYTHONDONTWRITEBYTECODE as set (by default .pyc go to a temporary folder)",
    )
    parser.add_argument(
        "--arms",
        default=",".join(a.name for a in ARMS),
        help="comma-separated arms, plain first (default: plain,run,off,start,aa)",
    )
    args = parser.parse_args()
    pairs = args.pairs if args.pairs is not None else (3 if args.quick else 7)
    http_pairs = args.http_pairs if args.http_pairs is not None else 3 * pairs
    scale = args.scale if args.scale is not None else (0.25 if args.quick else 1.0)
    requests = args.requests if args.requests is not None else (2_000 if args.quick else 5_000)
    slices = args.slices if args.slices is not None else (4 if args.quick else 5)
    load = HttpLoad(requests, slices, max(1000, requests // 5), args.connections, args.pin)
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = set(sections) - set(ALL_SECTIONS)
    names = [a.strip() for a in args.arms.split(",") if a.strip()]
    if (
        unknown
        or pairs < 1
        or http_pairs < 1
        or not names
        or names[0] != "plain"
        or set(names) - set(ARM)
    ):
        parser.error("bad --sections, --pairs or --arms (arms must start with plain)")
    arms = [ARM[name] for name in names]

    for line in machine_lines([sys.executable, *sys.argv]):
        print(line)
    print("arms (WORKLOAD = python benchmarks/workloads/<name>.py):")
    example = [sys.executable, "WORKLOAD"]
    for arm in arms:
        env = " ".join(f"{k}={v}" for k, v in arm.env.items())
        argv = arm.command(example + (["--start-agent"] if arm.in_code else []))
        print(f"  {arm.name:<6} {(env + ' ') if env else ''}{shlex.join(argv)}")
    print(
        "bytecode: "
        + (
            "kept as the environment says"
            if args.no_bytecode_cache
            else ".pyc cached in a temporary PYTHONPYCACHEPREFIX (the warm-up round fills it)"
        )
        + f"; PYTHONDONTWRITEBYTECODE in the environment: {'PYTHONDONTWRITEBYTECODE' in os.environ}"
    )
    if pairs < 5:
        print(f"note: {pairs} pairs is a smoke run; BENCHMARKS.md asks for at least 5")
    sys.stdout.flush()

    started = time.perf_counter()
    results_cpu: dict[str, Ratios] = {}
    results_http: dict[str, Ratios] = {}
    startup: dict[str, float] = {}
    records_summary = ""
    with tempfile.TemporaryDirectory(prefix="hawkwatch-bench-") as home:
        setup = make_setup(Path(home), bytecode_cache=not args.no_bytecode_cache)
        if "startup" in sections:
            startup = section_startup(
                arms, 5 if args.quick else 15, setup, importtime_runs=3 if args.quick else 7
            )
        if "hot" in sections:
            section_hot(arms, 2 if args.quick else 3, setup, args.quick)
        if "records" in sections:
            records_summary = record_encoding.section(max(pairs, 5) * 2 + 1, args.quick)
        if "cpu" in sections:
            print(f"\n## running cpu-bound: {CPU_MIX.name}", flush=True)
            results_cpu = section_cpu(arms, pairs, setup, scale, args.app_imports)
        if "http" in sections:
            print(f"\n## running asyncio http: {HTTP_SERVER.name}", flush=True)
            results_http = section_http(arms, http_pairs, setup, load)
        sessions = list((Path(home) / "sessions").glob("*"))
    print(
        f"\nran {time.perf_counter() - started:.0f} s; load average now "
        f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"{len(sessions)} session folders kept in the temporary HAWKWATCH_HOME"
    )
    if records_summary:
        print(records_summary)
    print(summary(pairs, http_pairs, results_cpu, results_http, startup))


def summary(
    pairs: int,
    http_pairs: int,
    cpu: dict[str, Ratios],
    http: dict[str, Ratios],
    startup: dict[str, float],
) -> str:
    parts = []
    judged: list[Ratios] = []

    def control(results: dict[str, Ratios], key: str) -> str:
        return f"; A/A control {pct(results[key].median)}" if key in results else ""

    if "run_work" in cpu:
        r = cpu["run_work"]
        judged.append(r)
        parts.append(
            f"cpu-bound {pct(r.median)} (median of {pairs} pairs, min {pct(min(r.values))}, "
            f"max {pct(max(r.values))}; whole process {pct(cpu['run_wall'].median)}"
            f"{control(cpu, 'aa_work')})"
        )
    if "run_time" in http:
        r = http["run_time"]
        judged.append(r)
        parts.append(
            f"asyncio http {pct(r.median)} time per request (median of {http_pairs} pairs, min "
            f"{pct(min(r.values))}, max {pct(max(r.values))}; {r.ci_text()}; "
            f"p99 {pct(http['run_p99'].median)}{control(http, 'aa_time')})"
        )
    if "run_main_ms" in startup:
        parts.append(
            f"start-up +{startup['run_wall_ms']:.0f} ms wall, "
            f"+{startup['run_main_ms']:.0f} ms to main"
        )
    verdict = ""
    if judged:
        if all(r.median_ci()[1] - 1 <= TARGET for r in judged):
            verdict = ": met"
        elif any(r.median_ci()[0] - 1 > TARGET for r in judged):
            verdict = ": NOT met"
        else:
            verdict = ": not decided at this noise (a confidence interval spans the target)"
    if not parts:
        return "agent overhead: nothing measured that the summary reports (see --sections)"
    return (
        "agent overhead (hawkwatch run, default monitors): "
        + "; ".join(parts)
        + f"; target <= {TARGET * 100:g} %{verdict}"
    )


if __name__ == "__main__":
    main()
