"""Where the time went on real code: hawkwatch's top-10 self-time functions against py-spy's,
and what each sampler costs the program.

Run: python benchmarks/profile_agreement.py [--runs 4] [--more-runs richards=12,...]
         [--scale 1.0] [--workloads all|a,b] [--overhead-rounds 5]
         [--overhead-workloads raytrace,richards] [--random-layouts]

Workloads, none written here: pyperformance's ``raytrace``, ``richards``, ``go`` and
``json_dumps``, run from the benchmark scripts its package ships (``data-files/benchmarks/
bm_*/run_benchmark.py --worker``, the ``bench`` extra installs it), and a pytest run of a slice
of hawkwatch's own suite (``tests/model tests/analysis tests/formats``, browser tests left out).

Agreement: runs alternate ``hawkwatch run --profile -c profiler.rate_hz=100`` (out-of-process
py-spy engine, pausing the program per sample by default, 100 Hz; the agent's in-process sampler
beside it keeps to its budget share) and, twice, ``py-spy record --rate 100 --subprocesses``
(blocking mode) on ``hawkwatch run`` with the profiler off — the same program, agent included;
only the program's processes count (the supervisor's are left out, as hawkwatch's py-spy never
sees them), and the agent's own start-up frames are left out of all. Self samples are summed per
function over the runs. Per workload: the top 10 of each; whether the top-5 sets match and the
largest gap in points over the union of both top-10s, for hawkwatch against py-spy and for
py-spy against itself (A/A: the noise floor of the criterion), and how far apart py-spy's ranks
5 and 6 are. A top-5 set is only reproducible when that margin is well outside its sampling
noise; the table prints how many samples (runs) would resolve it, and the verdict ``tied`` marks
top-5 sets that differ only by functions statistically tied with the other's 5th (py-spy against
itself shows the same). ``--more-runs`` gives such workloads more runs.

Overhead (section 2): a driver runs the workload's body and reports its own wall and CPU time
(``perf_counter``, ``process_time``), so interpreter start-up is left out. Arms, alternated in
rounds after a warm-up: ``plain`` (and ``aa``, the noise floor), ``hw-off`` (hawkwatch run,
every monitor off: the baseline of the hawkwatch arms), ``hw-pyspy-100``/``hw-pyspy-budget``
(only the profiler, py-spy engine at 100 Hz / at the default budget), ``hw-inproc-100``/
``hw-inproc-budget`` (in-process engine), ``hw-pyspy-budget-nonblock`` (py-spy reading without
pausing the program, ``profiler.pyspy_nonblocking=true``), and ``py-spy`` (py-spy record
at 100 Hz, blocking, against ``plain``). A py-spy arm whose hawkwatch py-spy made no window
stops the benchmark. Overhead = median over rounds of arm / baseline − 1 (wall, the process's
CPU, and the main thread's own CPU from ``schedstat``: the process's CPU less the agent's
threads).

``--random-layouts`` has every run (every arm, ``plain`` and ``aa`` included) first hand out
0–255 type version tags and allocate 0–2047 small strings, drawn at random per run
(``timed_run.py --layout``): which of a program's class-attribute lookups collide in CPython's
type-attribute cache depends on both, and anything run first (the agent, one object the sampler
makes during start-up) moves them — on ``richards`` worth up to 9 % of a loop's instructions
between layouts of the same arm. Drawn independently per run, that luck is spread over all arms
alike (``aa`` against ``plain`` shows its size) rather than charged to one; the table then adds
the mean over rounds.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from hawkwatch.formats.cpu_profile import read_profiles
from hawkwatch.model.profile import IN_PROCESS, PY_SPY, Profile, is_thread_frame
from hawkwatch.model.stack import PyFrame
from hawkwatch.pyspy import find_pyspy, parse_raw
from hawkwatch.store import list_sessions

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MONITORS_OFF = [f"-c{m}.enabled=false" for m in ("resources", "gc", "launch", "imports", "cpu")]
STALL_OFF = ["-cstall.enabled=false"]
# name: values of one loop each, at scale 1 (~6–8 s on a 2-vCPU VM)
PYPERFORMANCE = {"raytrace": 25, "richards": 120, "go": 18, "json_dumps": 600}
DRIVER = HERE / "workloads" / "timed_run.py"
ROOT = -1
"""Lines without a ``process PID:`` prefix (py-spy names every process with ``--subprocesses``)."""
PROCESS = re.compile(r'(?:^|;)process (\d+):"([^"]*)"', re.MULTILINE)



def workload_argv(name: str, scale: float, work: Path | None = None) -> list[str]:
    if name == "pytest":
        skip = "not viewer and not speedscope and not chromium and not any_records_give"
        # a fresh --basetemp per run: no run pays for removing another's old temporary folders
        basetemp = (work or Path(tempfile.gettempdir())) / f"basetemp-{os.urandom(4).hex()}"
        return ["-m", "pytest", "-q", "-p", "no:cacheprovider", f"--basetemp={basetemp}",
                "tests/model", "tests/analysis", "tests/formats", "-k", skip]  # fmt: skip
    import pyperformance

    base = Path(pyperformance.__file__).parent / "data-files" / "benchmarks"
    values = max(1, round(PYPERFORMANCE[name] * scale))
    script = base / f"bm_{name}" / "run_benchmark.py"
    return [str(script), "--worker", "-l", "1", "-n", str(values), "-w", "0"]


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HAWKWATCH_", "_HAWKWATCH"))}
    env["HAWKWATCH_HOME"] = str(home)
    return env


IMPORTS = "(imports)"
"""Samples under the import machinery, compared apart: hawkwatch's py-spy attaches to a running
interpreter, so the program's first imports (~0.1–0.5 s) fall before its first window, while
``py-spy record -- program`` sees them from the first instruction."""


def self_shares(stacks: Sequence[tuple[tuple[PyFrame, ...], int]]) -> Counter[str]:
    """Self samples per function ``func (file name)`` (line numbers merged); stacks through the
    import machinery count as ``IMPORTS``."""
    counts: Counter[str] = Counter()
    for stack, count in stacks:
        frames = [f for f in stack if not is_thread_frame(f)]
        if any(f.file.startswith("<frozen importlib") for f in frames):
            counts[IMPORTS] += count
        elif frames:
            inner = frames[0]
            counts[f"{inner.func} ({Path(inner.file).name})"] += count
    return counts


def profile_stacks(profiles: Sequence[Profile]) -> list[tuple[tuple[PyFrame, ...], int]]:
    return [pair for p in profiles for pair in p.stacks("cpu")]


def run_hawkwatch(
    name: str, scale: float, work: Path, options: Sequence[str] = ()
) -> tuple[Counter[str], Counter[str]]:
    home = work / f"hw-{len(list(work.iterdir()))}"
    command = [str(Path(sys.executable).with_name("hawkwatch")), "run", "--profile",
               *MONITORS_OFF, *STALL_OFF, "-c", "profiler.rate_hz=100",
               *(x for o in options for x in ("-c", o)), "--",
               sys.executable, *workload_argv(name, scale, work)]  # fmt: skip
    done = subprocess.run(command, cwd=REPO, env=_env(home), capture_output=True, text=True,
                          check=False)  # fmt: skip
    if done.returncode not in (0, 1):
        raise SystemExit(f"{name} under hawkwatch failed: {done.stderr[-1500:]}")
    engine_ran(home, f"{name} under hawkwatch")
    outside: Counter[str] = Counter()
    inside: Counter[str] = Counter()
    for session in list_sessions(home / "sessions"):
        profiles = read_profiles(session.path, session.records().records).value
        outside += self_shares(profile_stacks([p for p in profiles if p.sampler == PY_SPY]))
        inside += self_shares(profile_stacks([p for p in profiles if p.sampler == IN_PROCESS]))
    return outside, inside


def run_pyspy(name: str, scale: float, work: Path, pyspy: str) -> Counter[str]:
    raw = work / "peer.txt"
    # the same program: under hawkwatch run with the profiler off, so the agent's own effects
    # on the program (its imports, a larger heap for the GC) are in both arms
    hawkwatch = [str(Path(sys.executable).with_name("hawkwatch")), "run", *MONITORS_OFF,
                 *STALL_OFF, "--", sys.executable, *workload_argv(name, scale, work)]  # fmt: skip
    command = [pyspy, "record", "--rate", "100", "--format", "raw", "--threads",
               "--subprocesses", "--full-filenames", "-o", str(raw), "--", *hawkwatch]  # fmt: skip
    done = subprocess.run(command, cwd=REPO, env=_env(work / "peer"), capture_output=True,
                          check=False)  # fmt: skip
    if not raw.exists():
        raise SystemExit(f"py-spy on {name} failed: {done.stderr[-1500:]!r}")
    text = raw.read_text()
    # the supervisor is not the program: its CLI imports, its wait for the program (which
    # py-spy now and then counts as active) and its reading of the session are left out
    supervisor = {int(pid) for pid, argv in PROCESS.findall(text) if " run " in argv
                  and Path(argv.split()[1]).name == "hawkwatch"}  # fmt: skip
    counts: Counter[str] = Counter()
    for pid, stacks in parse_raw(text, ROOT).items():
        if pid != ROOT and pid not in supervisor:
            counts += self_shares(list(stacks.items()))
    return counts


def engine_ran(home: Path, what: str) -> None:
    """Stop when hawkwatch's py-spy made no window: its arm would measure nothing (a rate py-spy
    refused once left the default-budget arm without py-spy, unnoticed)."""
    notes = [s.metadata.get("profiler_outside") for s in list_sessions(home / "sessions")]
    windows = sum(n.get("windows", 0) for n in notes if isinstance(n, dict))
    if not windows:
        raise SystemExit(f"{what}: hawkwatch's py-spy made no window: {notes}")


def top(counts: Counter[str], n: int = 10) -> list[str]:
    return [k for k, _ in counts.most_common(n)]


def compare(a: Counter[str], b: Counter[str]) -> tuple[bool, float, float]:
    """(same top-5 set, largest gap in points over both top-10s, the 95 % sampling band of that
    gap — a difference of two binomial shares)."""
    ta, tb = sum(a.values()) or 1, sum(b.values()) or 1
    top_a, top_b = top(a), top(b)
    same5 = set(top_a[:5]) == set(top_b[:5])
    gaps = {k: abs(a[k] / ta - b[k] / tb) * 100 for k in {*top_a, *top_b}}
    gap = max(gaps.values(), default=0.0)
    widest = max(gaps, key=lambda k: gaps[k], default="")
    p = (a[widest] + b[widest]) / (ta + tb) if widest else 0.0
    band = 1.96 * math.sqrt(p * (1 - p) * (1 / ta + 1 / tb)) * 100
    return same5, gap, band


def tied(counts: Counter[str], x: str, y: str) -> bool:
    """Whether ``x`` and ``y`` have shares within the 95 % noise of their difference in this
    profile (two counts of one multinomial sample): their order is then not in the data."""
    total = sum(counts.values()) or 1
    px, py = counts[x] / total, counts[y] / total
    return abs(px - py) <= 1.96 * math.sqrt(max(px + py - (px - py) ** 2, 0.0) / total)


def top5_verdict(a: Counter[str], b: Counter[str]) -> str:
    """``same``; ``tied`` when every function in one top-5 only is tied (``tied``) with the
    other profile's 5th in that profile — the set is then not determined by the samples; else
    ``DIFFERENT``."""
    top_a, top_b = top(a, 5), top(b, 5)
    if set(top_a) == set(top_b):
        return "same"
    only_a = [k for k in top_a if k not in top_b]
    only_b = [k for k in top_b if k not in top_a]
    ok = all(tied(b, k, top_b[-1]) for k in only_a) and all(tied(a, k, top_a[-1]) for k in only_b)
    return "tied" if ok else "DIFFERENT"


def rank5_margin(counts: Counter[str]) -> tuple[float, float]:
    """(points between ranks 5 and 6, the 95 % band of that difference within one profile of
    these samples): a top-5 set only reproduces when the margin is well outside the band."""
    total = sum(counts.values()) or 1
    ranked = counts.most_common(6)
    if len(ranked) < 6:
        return 100.0, 0.0
    p5, p6 = ranked[4][1] / total, ranked[5][1] / total
    band = 1.96 * math.sqrt((p5 + p6 - (p5 - p6) ** 2) / total) * 100
    return (p5 - p6) * 100, band


def table(columns: Sequence[tuple[str, Counter[str]]]) -> list[str]:
    """Top 10 of each profile side by side (share, function)."""
    lines = [f"  {'#':>2}  " + "   ".join(f"{title[:47]:47}" for title, _ in columns)]
    tops = [(top(counts), sum(counts.values()) or 1, counts) for _, counts in columns]
    for i in range(10):
        cells = [
            f"{counts[names[i]] / total * 100:5.1f}% {names[i][:40]:40}" if i < len(names)
            else " " * 47
            for names, total, counts in tops
        ]  # fmt: skip
        lines.append(f"  {i + 1:>2}  " + "   ".join(cells))
    return lines


def agreement(
    names: list[str],
    runs: dict[str, int],
    scale: float,
    pyspy: str,
    options: Sequence[str] = (),
) -> list[str]:
    summary: list[str] = []
    with tempfile.TemporaryDirectory(prefix="hw-agreement-") as tmp:
        work = Path(tmp)
        for name in names:
            outside: Counter[str] = Counter()
            inside: Counter[str] = Counter()
            peer: Counter[str] = Counter()
            second: Counter[str] = Counter()
            load = os.getloadavg()[0]
            for _ in range(runs[name]):  # alternated: hawkwatch, py-spy, py-spy again (A/A), …
                o, i = run_hawkwatch(name, scale, work, options)
                outside += o
                inside += i
                peer += run_pyspy(name, scale, work, pyspy)
                second += run_pyspy(name, scale, work, pyspy)
            load = (load + os.getloadavg()[0]) / 2
            imports = []
            for counts in (outside, inside, peer, second):
                total = sum(counts.values()) or 1
                imports.append(counts.pop(IMPORTS, 0) / total * 100)
            n = (sum(outside.values()), sum(inside.values()), sum(peer.values()),
                 sum(second.values()))  # fmt: skip
            print(f"\n{name}: self time, {runs[name]} runs each; samples: hawkwatch py-spy {n[0]}, "
                  f"hawkwatch in-process {n[1]}, py-spy {n[2]}, py-spy again {n[3]}; "
                  f"load average {load:.2f}")  # fmt: skip
            print(f"  import machinery, left out of the comparison: hawkwatch py-spy "
                  f"{imports[0]:.1f} %, in-process {imports[1]:.1f} %, py-spy {imports[2]:.1f} "
                  f"%, py-spy again {imports[3]:.1f} % of samples")  # fmt: skip
            print("\n".join(table([("hawkwatch (py-spy engine)", outside),
                                   ("py-spy record (blocking)", peer),
                                   ("py-spy record again (A/A)", second)])))  # fmt: skip
            rows = {"hawkwatch py-spy engine vs py-spy": compare(outside, peer),
                    "py-spy vs py-spy again (A/A)": compare(peer, second),
                    "hawkwatch vs py-spy again": compare(outside, second),
                    "in-process sampler vs py-spy": compare(inside, peer)}  # fmt: skip
            pairs = {"hawkwatch py-spy engine vs py-spy": (outside, peer),
                     "py-spy vs py-spy again (A/A)": (peer, second),
                     "hawkwatch vs py-spy again": (outside, second),
                     "in-process sampler vs py-spy": (inside, peer)}  # fmt: skip
            verdicts = {label: top5_verdict(*pair) for label, pair in pairs.items()}
            for label, (_, gap, band) in rows.items():
                print(f"  {label:36} top-5 set {verdicts[label]:9}  largest gap "
                      f"{gap:5.2f} pp  (sampling noise ±{band:.2f} pp)")  # fmt: skip
            margin, margin_band = rank5_margin(peer + second)
            pooled = sum((peer + second).values())
            # the band shrinks as 1/√n: samples for it to fall inside the margin, and the runs
            needed = pooled * (margin_band / margin) ** 2 if margin > 0 else float("inf")
            print(f"  rank 5 vs 6 in py-spy (both runs pooled): {margin:.2f} pp apart, "
                  f"±{margin_band:.2f} pp noise at {pooled} samples; one profile resolves it "
                  f"from ~{needed:,.0f} samples (~{needed / max(pooled / 2, 1) * runs[name]:.0f}"
                  f" runs)")  # fmt: skip
            gap = rows["hawkwatch py-spy engine vs py-spy"][1]
            aa_gap = rows["py-spy vs py-spy again (A/A)"][1]
            in_gap = rows["in-process sampler vs py-spy"][1]
            summary.append(
                f"{name}: {gap:.2f} pp/{verdicts['hawkwatch py-spy engine vs py-spy']} top-5, "
                f"A/A {aa_gap:.2f} pp/{verdicts['py-spy vs py-spy again (A/A)']} (in-process "
                f"{in_gap:.2f} pp/{verdicts['in-process sampler vs py-spy']}; load {load:.1f})"
            )
    return summary


ARMS = ("plain", "aa", "hw-off", "hw-pyspy-100", "hw-pyspy-budget", "hw-pyspy-budget-nonblock",
        "hw-inproc-100", "hw-inproc-budget", "py-spy")  # fmt: skip
PINNED = "-pin0"
"""An arm name ending so runs the program on CPU 0 only (``taskset -c 0``; py-spy and the
supervisor stay free), against ``hw-off-pin0``: a resumed thread cannot then be moved to the
core py-spy just used (Linux's wake-up affinity: the tracer wakes it), so a difference between
pinned and free arms is the cost of those migrations (a cold private L2 per move)."""
BASELINE = {"aa": "plain", "py-spy": "plain", "hw-off": "plain", "hw-off-pin0": "plain"}


def arm_command(
    arm: str, name: str, scale: float, work: Path, pyspy: str, *, layout: str | None = None
) -> list[str]:
    shift = [] if layout is None else ["--layout", layout]
    body = [sys.executable, str(DRIVER), *shift, *workload_argv(name, scale)]
    if arm.endswith(PINNED):
        arm, body = arm.removesuffix(PINNED), ["taskset", "-c", "0", *body]
    hw = [str(Path(sys.executable).with_name("hawkwatch")), "run", *MONITORS_OFF, *STALL_OFF]
    profiled = {
        "hw-pyspy-100": ["--profile", "-cprofiler.engine=py-spy", "-cprofiler.rate_hz=100"],
        "hw-pyspy-budget": ["--profile", "-cprofiler.engine=py-spy"],
        "hw-pyspy-budget-nonblock": ["--profile", "-cprofiler.engine=py-spy",
                                     "-cprofiler.pyspy_nonblocking=true"],
        "hw-inproc-100": ["--profile", "-cprofiler.engine=in-process", "-cprofiler.rate_hz=100"],
        "hw-inproc-budget": ["--profile", "-cprofiler.engine=in-process"],
    }
    if arm in ("plain", "aa"):
        return body
    if arm == "hw-off":
        return [*hw, "--", *body]
    if arm == "py-spy":
        return [pyspy, "record", "--rate", "100", "--format", "raw",
                "-o", str(work / "spy.txt"), "--", *body]  # fmt: skip
    return [*hw, *profiled[arm], "--", *body]


def overhead(
    names: list[str],
    rounds: int,
    scale: float,
    pyspy: str,
    arms: Sequence[str] = ARMS,
    *,
    random_layouts: bool = False,
) -> list[str]:
    summary: list[str] = []
    draw = random.Random()
    with tempfile.TemporaryDirectory(prefix="hw-agreement-ovh-") as tmp:
        work = Path(tmp)
        for name in names:
            times: dict[str, list[tuple[float, float, float]]] = {arm: [] for arm in arms}
            for round_number in range(rounds + 1):  # round 0 warms up
                shift = round_number % len(arms)
                order = [*arms[shift:], *arms[:shift]]
                for arm in order:
                    home = work / f"home-{arm}-{round_number}"
                    layout = (f"{draw.randrange(256)},{draw.randrange(2048)}"
                              if random_layouts else None)  # fmt: skip
                    done = subprocess.run(
                        arm_command(arm, name, scale, work, pyspy, layout=layout), cwd=REPO,
                        env=_env(home), capture_output=True, text=True, check=False,
                    )  # fmt: skip
                    if arm.startswith("hw-pyspy"):
                        engine_ran(home, f"{arm} on {name}")
                    lines = [x for x in done.stdout.splitlines() if x.startswith('{"work_s"')]
                    if not lines:
                        raise SystemExit(f"{arm} on {name} failed: {done.stderr[-1500:]}")
                    result = json.loads(lines[-1])
                    if round_number:  # main: the main thread's own CPU (schedstat)
                        main = (result.get("main") or [result["work_cpu_s"]])[0]
                        times[arm].append((result["work_s"], result["work_cpu_s"], main))
            shifted = ", a random memory layout per run" if random_layouts else ""
            print(f"\noverhead on {name} ({rounds} rounds{shifted}, median of per-round ratios "
                  "[min … max]" + (", mean" if random_layouts else "") + "):")  # fmt: skip
            print(f"  {'arm':24} {'vs':8} {'wall':>26} {'cpu':>26} {'main thread cpu':>26}")
            for arm in arms:
                base = BASELINE.get(arm, "hw-off-pin0" if arm.endswith(PINNED) else "hw-off")
                if arm == "plain" or base not in times:
                    continue
                cells = []
                for column in (0, 1, 2):
                    ratios = [a[column] / b[column] - 1 for a, b in zip(times[arm], times[base],
                                                                        strict=True)]
                    cells.append(f"{statistics.median(ratios) * 100:+6.2f}% "
                                 f"[{min(ratios) * 100:+6.2f} … {max(ratios) * 100:+6.2f}]"
                                 + (f" mean {statistics.fmean(ratios) * 100:+.2f}%"
                                    if random_layouts else ""))  # fmt: skip
                print(f"  {arm:24} {base:8} {cells[0]:>26} {cells[1]:>26} {cells[2]:>26}")
                if arm != "hw-off":
                    wall, cpu = ((c.split()[0] + (f" (mean {c.split()[-1]})" if random_layouts
                                                  else "")) for c in cells[:2])  # fmt: skip
                    summary.append(f"{name} {arm} wall {wall} cpu {cpu}")
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument(
        "--more-runs",
        default="richards=10",
        help="runs per workload where ranks 5 and 6 are close (name=N,...): enough samples "
        "for py-spy's own top-5 to repeat (A/A)",
    )
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--workloads", default="all")
    parser.add_argument("--overhead-rounds", type=int, default=5)
    parser.add_argument("--overhead-workloads", default="raytrace,richards")
    parser.add_argument("--arms", default=",".join(ARMS), help="overhead arms to run")
    parser.add_argument("--overhead-scale", type=float, default=0.5)
    parser.add_argument("--random-layouts", action="store_true",
                        help="each overhead run shifts type version tags and the heap by a "
                        "random amount first, so no arm keeps one lucky or unlucky type-cache "
                        "layout (see above)")
    parser.add_argument("-c", dest="options", action="append", default=[],
                        help="extra hawkwatch option for its agreement runs (diagnostics)")
    args = parser.parse_args()
    pyspy = find_pyspy()
    if pyspy is None:
        print("profile_agreement: py-spy is missing: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    names = [*PYPERFORMANCE, "pytest"] if args.workloads == "all" else args.workloads.split(",")
    print(f"machine: nproc={os.cpu_count()}, Python {platform.python_version()}")
    print(f"command: python {' '.join(sys.argv)}")
    runs = {name: args.runs for name in names}
    for item in filter(None, args.more_runs.split(",")):
        name, _, count = item.partition("=")
        if name in runs and args.runs:
            runs[name] = int(count)
    summary = agreement(names, runs, args.scale, pyspy, args.options) if args.runs else []
    ovh_names = [n for n in args.overhead_workloads.split(",") if n]
    if args.overhead_rounds and ovh_names:
        arms = tuple(args.arms.split(","))
        summary += overhead(ovh_names, args.overhead_rounds, args.overhead_scale, pyspy, arms,
                            random_layouts=args.random_layouts)  # fmt: skip
    print("summary: " + "; ".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
