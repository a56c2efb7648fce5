"""Wall time of a process start under two checkouts of hawkwatch, alternated process by process.

Run: python benchmarks/startup_paired.py --base OTHER/src [--new src] [--rounds 21]
         [--arms plain,run,off,start] [--base-script FILE] [--new-script FILE] [--project]

``agent_overhead.py``'s start-up section compares arms of one checkout with plain Python; this
compares two checkouts (``git archive BASE src | tar -x -C /tmp/base``), each first on
``PYTHONPATH``, with this interpreter. Every round runs each arm once under each checkout, the
two back to back in alternating order (base then new, new then base, …), so the load of a shared
machine falls on both alike; the figures are medians of the per-round differences new − base
(ms), with their range, and each checkout's median over plain Python of the same round.

Arms (the program prints ``time.time()`` at its first statement: "to main" is spawn to there):

  plain   python -c PROGRAM                                   (the same for both: a control)
  run     SCRIPT run -- python -c PROGRAM
  off     HAWKWATCH_ENABLED=false SCRIPT run -- python -c PROGRAM
  start   python -c "import hawkwatch; hawkwatch.start(); PROGRAM"

SCRIPT is the ``hawkwatch`` command beside this interpreter unless ``--base-script`` or
``--new-script`` names another file (run as ``python FILE``, what its ``#!`` line does): the
console script is not part of ``src``. ``.pyc`` files go to a cache folder of this run
(``PYTHONPYCACHEPREFIX``), filled by a warm-up round; sessions to a temporary ``HAWKWATCH_HOME``.
The processes run in an empty folder, or with ``--project`` in one holding a project's
``pyproject.toml`` (without a ``[tool.hawkwatch]`` table), as when run from a project's tree.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = """[project]
name = "shop"
version = "1.4.2"
dependencies = ["requests>=2.28", "sqlalchemy>=2"]

[tool.ruff]
line-length = 100
"""
PROGRAM = "import time; t0 = time.time(); import sys; sys.stdout.write(str(t0)){extra}"
IN_CODE = "; import hawkwatch; hawkwatch.start()"


def command(arm: str, script: list[str]) -> list[str]:
    python = sys.executable
    code = PROGRAM.format(extra=IN_CODE if arm == "start" else "")
    if arm in ("run", "off"):
        return [*script, "run", "--", python, "-c", code]
    return [python, "-c", code]


def environment(root: Path, src: str, arm: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    for name in ("PYTHONDEVMODE", "PYTHONTRACEMALLOC", "PYTHONPROFILEIMPORTTIME"):
        env.pop(name, None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = src
    env["PYTHONPYCACHEPREFIX"] = str(root / "pyc")
    env["HAWKWATCH_HOME"] = str(root / "home")
    if arm == "off":
        env["HAWKWATCH_ENABLED"] = "false"
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float]:
    """(wall, to main, CPU of the process and its children) in seconds."""
    cpu = _children_cpu()
    spawned = time.time()
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{argv}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return wall, float(done.stdout.split()[0]) - spawned, _children_cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the other checkout's src folder")
    parser.add_argument("--new", default=str(Path(__file__).resolve().parents[1] / "src"))
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--arms", default="plain,run,off,start")
    default_script = str(Path(sys.executable).with_name("hawkwatch"))
    parser.add_argument("--base-script", help=f"default: {default_script}")
    parser.add_argument("--new-script", help=f"default: {default_script}")
    parser.add_argument("--project", action="store_true", help="run in a project's folder")
    args = parser.parse_args()
    trees = {
        "base": (str(Path(args.base).resolve()), args.base_script),
        "new": (str(Path(args.new).resolve()), args.new_script),
    }
    scripts = {
        name: [sys.executable, script] if script else [default_script]
        for name, (_, script) in trees.items()
    }
    arms = args.arms.split(",")
    if "plain" not in arms:
        arms.insert(0, "plain")
    samples: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="hawkwatch-paired-") as folder:
        root = Path(folder)
        (root / "cwd").mkdir()
        if args.project:
            (root / "cwd" / "pyproject.toml").write_text(PROJECT)
        for index in range(args.rounds + 1):  # round 0: warm-up (fills the bytecode cache)
            order = list(trees) if index % 2 else list(reversed(trees))
            shift = index % len(arms)
            for arm in [*arms[shift:], *arms[:shift]]:
                for tree in order:
                    src = trees[tree][0]
                    argv = command(arm, scripts[tree])
                    figures = timed(argv, environment(root, src, arm), root / "cwd")
                    if index:
                        samples.setdefault((tree, arm), []).append(figures)
    load = os.getloadavg()
    print(f"{args.rounds} rounds; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(
        f"{'arm':<6} {'base Δ wall':>11} {'new Δ wall':>10} {'new − base: wall':>27} "
        f"{'to main':>27} {'CPU':>27}"
    )
    plain = {tree: samples[(tree, "plain")] for tree in trees}
    for arm in arms:
        over = {
            tree: statistics.median(
                (a[0] - p[0]) * 1e3 for a, p in zip(samples[(tree, arm)], plain[tree], strict=True)
            )
            for tree in trees
        }
        cells = []
        for which in (0, 1, 2):
            diffs = sorted(
                (n[which] - b[which]) * 1e3
                for n, b in zip(samples[("new", arm)], samples[("base", arm)], strict=True)
            )
            cells.append(
                f"{statistics.median(diffs):+7.1f} ({diffs[0]:+6.1f} .. {diffs[-1]:+6.1f})"
            )
        print(
            f"{arm:<6} {over['base']:>+11.1f} {over['new']:>+10.1f} "
            + " ".join(f"{cell:>27}" for cell in cells)
        )
    print(
        "  Δ wall: over plain python in the same round; new − base: medians of per-round "
        "differences (min .. max), ms; CPU: user + system of the process and its children"
    )


if __name__ == "__main__":
    main()
