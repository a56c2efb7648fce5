"""Exit classification accuracy: known faults injected into real processes, verdicts counted.

Run: python benchmarks/exit_classification.py [--repeat 3]

Each scenario is a real program that ends in a known way (clean, sys.exit(3), os._exit(4), an
uncaught exception, SIGSEGV through ctypes, SIGKILL and SIGTERM from this process), run
``--repeat`` times under ``hawkwatch run`` (supervised) and with ``hawkwatch.start()`` alone
(classified by the next agent start). Kernel OOM kills and hang kills need a memory cgroup and a
stalled loop; ``tests/e2e/test_crash_exits.py`` covers them. Prints, per scenario and mode, how
many verdicts were right, and the wrong or missing ones; the summary line gives accuracy and
how many sessions were left unclassified.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

HAWKWATCH = Path(sys.executable).with_name("hawkwatch")
SEGV = "import ctypes\nctypes.string_at(0)\n"
WAIT = "import os, time\nprint(os.getpid(), flush=True)\ntime.sleep(60)\n"
SCENARIOS: dict[str, tuple[str, str, int | None]] = {
    # name: (program body, expected kind, signal sent from outside)
    "clean": ("print('ok')\n", "clean", None),
    "sys.exit(3)": ("import sys\nsys.exit(3)\n", "exit-code", None),
    "os._exit(4)": ("import os\nos._exit(4)\n", "exit-code", None),
    "exception": ("raise ValueError('boom')\n", "exception", None),
    "SIGSEGV": (SEGV, "fatal-signal", None),
    "kill -9": (WAIT, "killed", signal.SIGKILL),
    "SIGTERM": (WAIT, "killed", signal.SIGTERM),
}


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    env["HAWKWATCH_HOME"] = str(home)
    return env


def _run(argv: list[str], home: Path, send: int | None) -> None:
    with subprocess.Popen(
        argv, env=_env(home), cwd=home, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    ) as child:
        if send is not None:
            assert child.stdout is not None
            os.kill(int(child.stdout.readline()), send)
        child.communicate(timeout=120)


def _verdict(home: Path) -> str | None:
    done = subprocess.run(
        [str(HAWKWATCH), "sessions", "--json"],
        env=_env(home),
        capture_output=True,
        text=True,
        check=True,
    )
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    return rows[0]["exit"] if rows else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    right = total = unclassified = 0
    print(f"{'scenario':<12} {'mode':<13} right  wrong or missing")
    for name, (body, expected, send) in SCENARIOS.items():
        for mode in ("supervised", "unsupervised"):
            got: list[str | None] = []
            for _ in range(args.repeat):
                with tempfile.TemporaryDirectory(prefix="hawkwatch-exit-") as scratch:
                    home = Path(scratch)
                    app = home / "app.py"
                    if mode == "supervised":
                        app.write_text("import hawkwatch\n" + body)
                        _run([str(HAWKWATCH), "run", "--", str(app)], home, send)
                    else:
                        app.write_text("import hawkwatch\nhawkwatch.start()\n" + body)
                        _run([sys.executable, str(app)], home, send)
                        after = home / "next.py"
                        after.write_text("import hawkwatch\nhawkwatch.start()\n")
                        _run([sys.executable, str(after)], home, None)
                    got.append(_verdict(home))
            ok = sum(kind == expected for kind in got)
            wrong = [kind for kind in got if kind != expected]
            right, total = right + ok, total + len(got)
            unclassified += sum(kind is None for kind in got)
            print(f"{name:<12} {mode:<13} {ok}/{len(got)}  {', '.join(map(str, wrong)) or '-'}")
    print(
        f"{right}/{total} exits classified right ({100 * right / total:.0f} %), "
        f"{unclassified} unclassified"
    )


if __name__ == "__main__":
    main()
