"""Instructions a process start costs under the agent, counted by callgrind (deterministic).

Run: python benchmarks/startup_instructions.py [--program "pass"] [--arms bare,run,start]
         [--src OTHER/src] [--script FILE]

``--src`` runs another checkout's ``src`` (first on ``PYTHONPATH``) with this interpreter: a
before/after comparison in one go (``git archive BASE src | tar -x -C /tmp/base``). ``--script``
runs ``hawkwatch run`` as ``python FILE`` (what its ``#!`` line does) instead of the
``hawkwatch`` command beside this interpreter: the command is not part of ``src``.

Arms, each in a fresh ``HAWKWATCH_HOME`` of fixed name (folder names feed hashes and copies):

  bare    python -c PROGRAM
  run     hawkwatch run -- python -c PROGRAM
  start   python -c "import hawkwatch; hawkwatch.start(); PROGRAM"

``valgrind --tool=callgrind --trace-children=yes --separate-threads=yes`` counts every process
and thread; ``--dump-before=os_posix_spawnp*`` splits the supervisor at the spawn, so its figures
are "before spawn" (parse, check options, build the environment) and "after" (waiting, the
exit-state record, tidying). The program's main thread is deterministic; the agent's threads (the
scheduler, the store's writer) are reported apart, since how much they do before the program
ends depends on how fast the main thread runs (valgrind slows it ~50×). ``.pyc`` files go to a
cache folder of this run (``PYTHONPYCACHEPREFIX``) filled by one plain run of each arm first and
``compileall`` of the hawkwatch package, so nothing is compiled while counting, whatever
``PYTHONDONTWRITEBYTECODE`` says; ``PYTHONHASHSEED=0``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TOTALS = re.compile(r"^totals:\s+(\d+)", re.MULTILINE)
HEADER = re.compile(r"^(cmd|part|thread):\s*(.*)$", re.MULTILINE)


def arms(program: str, script: str | None = None) -> dict[str, list[str]]:
    python = sys.executable
    hawkwatch = [python, script] if script else [str(Path(python).with_name("hawkwatch"))]
    return {
        "bare": [python, "-c", program],
        "run": [*hawkwatch, "run", "--", python, "-c", program],
        "start": [python, "-c", f"import hawkwatch\nhawkwatch.start()\n{program}"],
    }


SOURCE: list[str] = []  # --src: another checkout's src, first on PYTHONPATH


def environment(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    if SOURCE:
        env["PYTHONPATH"] = os.pathsep.join([*SOURCE, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(root / "pyc")
    env["PYTHONHASHSEED"] = "0"
    env["HAWKWATCH_HOME"] = str(root / "home")
    return env


def fresh(root: Path) -> None:
    shutil.rmtree(root / "home", ignore_errors=True)
    shutil.rmtree(root / "work", ignore_errors=True)
    (root / "work").mkdir()


_SUPERVISOR_PARTS = {"1": "supervisor before spawn", "2": "supervisor while program runs"}


def counted(root: Path, argv: list[str]) -> dict[str, int]:
    """Instructions by part: supervisor before/after the spawn, program main/other threads."""
    out = root / "cg"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    fresh(root)
    command = [
        "valgrind",
        "--tool=callgrind",
        "--trace-children=yes",
        "--separate-threads=yes",
        "--dump-before=os_posix_spawnp*",
        "--dump-before=os_waitpid*",
        f"--callgrind-out-file={out}/cg.%p",
        *argv,
    ]
    done = subprocess.run(
        command,
        env=environment(root),
        cwd=root / "work",
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{argv}: exit {done.returncode}\n{done.stderr[-2000:]}")
    figures: dict[str, int] = {}
    for path in sorted(out.iterdir()):
        text = path.read_text(errors="replace")
        total = TOTALS.search(text)
        if total is None:
            continue
        fields = dict(HEADER.findall(text))
        command = fields.get("cmd", "").split()
        # the hawkwatch command, or python FILE (--script): the program is python -c
        supervisor = len(command) > 1 and command[1] != "-c"
        main = fields.get("thread", "1").strip() == "1"
        # cg.PID.N-TT: the dump before the Nth spawn or wait; cg.PID-TT: the rest
        part = path.name.split("-")[0].split(".")[2:]
        if supervisor:
            name = _SUPERVISOR_PARTS.get(part[0] if part else "", "supervisor after the program")
            name = name if main else "supervisor threads"
        else:
            name = "program main thread" if main else "program agent threads"
        figures[name] = figures.get(name, 0) + int(total.group(1))
    return figures


def compile_hawkwatch(root: Path) -> None:
    """Every hawkwatch module into the bytecode cache: the plain runs leave out those the
    agent's threads import after the program ended (the memory limit, at the first resource
    sample), and a counted run then compiled them on that thread (~20 M instructions, and a
    busier GIL for the main thread) or not, as the threads happened to run."""
    python = sys.executable
    env = environment(root)
    where = [python, "-c", "import hawkwatch, os; print(os.path.dirname(hawkwatch.__file__))"]
    package = subprocess.run(where, env=env, capture_output=True, text=True, check=True)
    subprocess.run(
        [python, "-m", "compileall", "-q", package.stdout.strip()],
        env=env,
        capture_output=True,
        check=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--program", default="pass", help="the program's code (python -c)")
    parser.add_argument("--arms", default="bare,run,start")
    parser.add_argument("--src", help="another checkout's src folder, to compare")
    parser.add_argument("--script", help="run hawkwatch as python FILE (default: the command)")
    args = parser.parse_args()
    if args.src:
        SOURCE.append(str(Path(args.src).resolve()))
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed")
    chosen = {k: v for k, v in arms(args.program, args.script).items() if k in args.arms.split(",")}
    with tempfile.TemporaryDirectory(prefix="hawkwatch-startup-") as folder:
        root = Path(folder)
        for argv in chosen.values():  # fill the bytecode cache
            fresh(root)
            subprocess.run(
                argv, env=environment(root), cwd=root / "work", capture_output=True, check=True
            )
        compile_hawkwatch(root)
        print(f"{'arm':<6} {'part':<26} {'instructions':>14}")
        for arm, argv in chosen.items():
            figures = counted(root, argv)
            for part, count in sorted(figures.items()):
                print(f"{arm:<6} {part:<26} {count / 1e6:>12.1f} M")
            print(f"{arm:<6} {'total':<26} {sum(figures.values()) / 1e6:>12.1f} M")


if __name__ == "__main__":
    main()
