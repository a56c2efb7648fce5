"""What starting costs: the agent imports only what its calls need, defers the rest to its
thread, and ``hawkwatch run`` loads the config module only when there is something to check.

These are structural checks (which modules are loaded, what runs where); the time itself is
measured by ``benchmarks/agent_overhead.py``, never asserted here.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from hawkwatch.agent.scheduler import Scheduler
from hawkwatch.model.records import ExitClassification, decode_all
from hawkwatch.store import Session, list_sessions
from tests.builders import wait_for

NOT_AT_START = (
    "hawkwatch.analysis.session_report",  # the report's machinery
    "hawkwatch.analysis.calltree",  # needed when a CPU episode is written
    "hawkwatch.agent.plugins.profiler",  # off by default
    "hawkwatch.agent.plugins.memory_trace",  # after a growth finding
    "hawkwatch.model.allocation_report",
    "hawkwatch.analysis.allocations",
    "hawkwatch.model.report",
    "psutil",  # Linux reads /proc
    "hashlib",  # fingerprints: at the first stall
    "tomllib",  # no config file here
    "rich",
    "hawkwatch.cli",
    "logging",  # imported at the agent's first log message
    "statistics",  # with memory-growth fits, after a minute of readings
    "tracemalloc",  # once memory tracing starts
    "sysconfig",  # library prefixes: at the first stall or crash
    "importlib.abc",
    "hawkwatch.api.options",
    "socket",  # wrapped when the program imports it (network monitor)
    "hawkwatch.agent.plugins.net_httpx",  # loaded with httpx
    "hawkwatch.agent.plugins.net_aiohttp",  # loaded with aiohttp
    "hawkwatch.agent.plugins.stall_record",  # at the first stall (watchdog thread)
    "hawkwatch.agent.stacks",  # stack capture: at a stall or a CPU sample
    "hawkwatch.model.stack",
    "traceback",  # formats an exception at the agent's first error
    "msgspec",  # with the typed model: start and exit records are plain (model.plain_records)
    "hawkwatch.model.records",  # loaded by a monitor when it writes (test_startup_records.py)
    "dataclasses",  # the I/O canary (on by default) keeps plain classes (model.io)
    "inspect",
    "typing",  # annotations only: TYPE_CHECKING imports and hawkwatch._runtime_typing
)


def clean_env() -> dict[str, str]:
    """This process's environment without the shell's hawkwatch options."""
    return {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}


def spied_env(tmp_path: Path, sitecustomize: str) -> dict[str, str]:
    """A clean environment whose Python processes first run ``sitecustomize`` (an audit-hook
    spy) from a folder of their own."""
    spy = tmp_path / "spy"
    spy.mkdir()
    (spy / "sitecustomize.py").write_text(sitecustomize)
    return clean_env() | {"PYTHONPATH": str(spy)}


def test_starting_the_agent_imports_only_what_its_calls_need(tmp_path: Path) -> None:
    program = (
        "import json, sys\n"
        "import hawkwatch\n"
        "assert hawkwatch.start()\n"
        f"print(json.dumps([m for m in {list(NOT_AT_START)!r} if m in sys.modules]))\n"
    )
    env = clean_env()
    env["HAWKWATCH_HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-c", program], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


# What the calling thread must not import inside ``start()``: deferred to the first tick, the
# first stall or crash, the scheduler thread, the program's own import, or never needed.
NOT_ON_THE_CALLING_THREAD = (
    "logging",  # the agent's loggers import it at their first message; the tap waits for it
    "statistics",  # memory growth fits need 54 s of readings
    "tracemalloc",  # only once memory tracing starts
    "sysconfig",  # library prefixes: at the first stall or crash
    "importlib.abc",  # the network finder is duck-typed
    "importlib.resources",
    "tempfile",
    "hawkwatch.agent.crash_recovery",  # earlier sessions: the scheduler thread, or at stop
    "hawkwatch.analysis.exit_classify",
    "hawkwatch.api.options",
    "argparse",
    "hawkwatch.agent.plugins.memory_objects",  # the object census: while tracing
    "hawkwatch.store.appender_read",  # the store's reading side: readers and recovery
)


def test_start_leaves_deferred_work_off_the_calling_thread(tmp_path: Path) -> None:
    """Imports made by the thread calling ``start()`` while it runs, seen by a finder placed
    first on ``sys.meta_path``; the agent's own threads may import the rest meanwhile."""
    program = (
        "import json, sys, threading\n"
        "seen = []\n"
        "class Spy:\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if threading.current_thread() is threading.main_thread():\n"
        "            seen.append(name)\n"
        "sys.meta_path.insert(0, Spy())\n"
        "import hawkwatch\n"
        "assert hawkwatch.start()\n"
        "sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != 'Spy']\n"
        f"print(json.dumps([m for m in {list(NOT_ON_THE_CALLING_THREAD)!r} if m in seen]))\n"
        "print(json.dumps(len(seen)))\n"
    )
    home = tmp_path / "home"
    env = clean_env()
    env["HAWKWATCH_HOME"] = str(home)
    for _ in range(2):  # the second start finds an earlier session to classify
        done = subprocess.run(
            [sys.executable, "-c", program], env=env, cwd=tmp_path, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        loaded, count = map(json.loads, done.stdout.splitlines())
        assert loaded == []
        assert count > 20  # the spy saw the agent's own imports
    # the deferred work still happened: the first session's end was classified
    first = sorted((home / "sessions").iterdir())[0]
    assert (first / "exit-classified").exists()


AFTER_THE_SPAWN = (
    "msgspec",
    "typing",  # the supervisor's own modules import it only for type checkers
    "tempfile",
    "dataclasses",
    "logging",
    "hawkwatch.store",
    "hawkwatch.model.records",
    "hawkwatch.agent.api",
    "hawkwatch.agent.crash_recovery",
    "hawkwatch.report.outputs",
    "hawkwatch.api.options",
    "subprocess",  # os.posix_spawnp starts the program
    "threading",
    "pathlib",  # the config file is looked for with os.path
    "shutil",  # argparse's help formatter is told the terminal's width
    "signal",  # the launcher forwards signals with _signal (no enums)
    "contextlib",  # try/except in the launcher
    "importlib",  # subcommand modules are loaded with __import__ (importlib brings warnings)
)


def test_the_supervisor_imports_only_what_spawning_needs_before_the_spawn(tmp_path: Path) -> None:
    """``hawkwatch run`` up to ``Popen``: parse, check the options strictly, build the child's
    environment. The record types, the store and the agent load while the program runs."""
    program = (
        "import json, sys\n"
        "from hawkwatch.cli import build_parser\n"
        "args = build_parser(['run', '--', 'true']).parse_args(['run', '--', 'true'])\n"
        "from hawkwatch import launcher\n"
        "from hawkwatch.config import load_config\n"
        "load_config({}, strict=True)\n"
        "launcher.build_environment({}, {'gc.threshold_ms': '5'}, 'x')\n"
        f"print(json.dumps(sorted(m for m in {sorted(AFTER_THE_SPAWN)!r} if m in sys.modules)))\n"
    )
    env = clean_env()
    env["HAWKWATCH_HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-c", program], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


# What the installed command has not loaded when it spawns the program, besides AFTER_THE_SPAWN
# (those a plain interpreter of this version does not load itself): re and the modules it brings
# (pip's generated console-script wrapper imports re first); collections and types, which the
# supervisor's modules import for type checkers only; with nothing to check (no option, no
# variable but HAWKWATCH_HOME, no config file), the config module (loaded while it runs).
NOT_AT_THE_SPAWN = (
    "re", "enum", "functools", "collections", "operator", "types", "tomllib",
    "hawkwatch.config", "hawkwatch.options", *AFTER_THE_SPAWN
)  # fmt: skip

# A project's own pyproject.toml, without a [tool.hawkwatch] table: not parsed (no tomllib).
PROJECT = "[project]\nname = 'shop'\ndependencies = ['requests']\n\n[tool.ruff]\nline-length = 99\n"

SPAWN_SPY = (  # a sitecustomize: which of NOT_AT_THE_SPAWN are loaded at os.posix_spawn
    "import os, sys\n"
    "def spy(event, args):\n"
    "    if event == 'os.posix_spawn':\n"
    f"        loaded = sorted(m for m in {NOT_AT_THE_SPAWN!r} if m in sys.modules)\n"
    "        with open(os.environ['SPAWN_SPY_FILE'], 'a') as f:\n"
    "            f.write(repr(loaded) + '\\n')\n"
    "sys.addaudithook(spy)\n"
)


def test_the_installed_command_spawns_the_program_before_loading_re(tmp_path: Path) -> None:
    """The ``hawkwatch`` command as installed (``bin/hawkwatch``, a script of ours: not pip's
    entry-point wrapper, which imports ``re``), seen from an audit hook at ``posix_spawn``; run
    in a project whose ``pyproject.toml`` has no table of ours."""
    (tmp_path / "pyproject.toml").write_text(PROJECT)
    env = spied_env(tmp_path, SPAWN_SPY)
    env |= {
        "HAWKWATCH_HOME": str(tmp_path / "home"),
        "SPAWN_SPY_FILE": str(tmp_path / "loaded"),
    }
    listed = f"import sys; print([m for m in {NOT_AT_THE_SPAWN!r} if m in sys.modules])"
    plain = subprocess.run(
        [sys.executable, "-c", listed],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert plain.returncode == 0, plain.stderr
    itself = set(ast.literal_eval(plain.stdout))
    done = run_supervised(tmp_path, env, sys.executable, "-c", "pass")
    assert done.returncode == 0, done.stderr
    (loaded,) = (tmp_path / "loaded").read_text().splitlines()  # the supervisor's one spawn
    assert [m for m in ast.literal_eval(loaded) if m not in itself] == []


TIDY_SPY = (  # a sitecustomize: the supervisor's import of shutil and its read of the announcement
    "import os, sys\n"
    "def spy(event, args):\n"
    "    if 'hawkwatch.launcher' not in sys.modules:\n"
    "        return\n"  # the program's process: not the supervisor
    "    shutil = event == 'import' and args[0] == 'shutil'\n"
    "    if shutil or event == 'open' and str(args[0]).endswith(os.sep + 'session'):\n"
    "        with open(os.environ['SPY_FILE'], 'a') as f:\n"
    "            f.write(event + '\\n')\n"
    "sys.addaudithook(spy)\n"
)


@pytest.mark.parametrize("keep", [2, 10])
def test_the_supervisor_loads_what_tidying_needs_while_the_program_runs(
    tmp_path: Path, keep: int
) -> None:
    """With ``sessions.keep`` sessions there already, the program's own pushes one out:
    ``shutil`` (for ``rmtree``) is imported before the program ended (the supervisor reads
    the program's announcement then), not after it; with fewer, not at all."""
    options = {"HAWKWATCH_HOME": str(tmp_path / "home"), "HAWKWATCH_SESSIONS_KEEP": str(keep)}
    for _ in range(2):
        done = run_supervised(tmp_path, clean_env() | options, sys.executable, "-c", "pass")
        assert done.returncode == 0, done.stderr
    env = spied_env(tmp_path, TIDY_SPY) | options | {"SPY_FILE": str(tmp_path / "events")}
    done = run_supervised(tmp_path, env, sys.executable, "-c", "pass")
    assert done.returncode == 0, done.stderr
    events = (tmp_path / "events").read_text().splitlines()
    assert events == (["import", "open"] if keep == 2 else ["open"])
    assert len(list((tmp_path / "home" / "sessions").iterdir())) == min(keep, 3)


AFTER_SPY = (  # a sitecustomize: what the supervisor imports once it has read the announcement
    "import os, sys\n"
    "after = []\n"
    "def spy(event, args):\n"
    "    if 'hawkwatch.launcher' not in sys.modules:\n"
    "        return\n"  # the program's process: not the supervisor
    "    if event == 'open' and str(args[0]).endswith(os.sep + 'session'):\n"
    "        after.append('<the program ended>')\n"
    "    elif event == 'import' and after:\n"
    "        after.append(args[0])\n"
    "sys.addaudithook(spy)\n"
    "import atexit\n"
    "atexit.register(lambda: open(os.environ['SPY_FILE'], 'w').write(repr(after)))\n"
)


def test_after_a_normal_end_the_supervisor_imports_nothing(tmp_path: Path) -> None:
    """Writing a normal end (the exit records read back, the exit-state, the classification)
    needs only what the supervisor loaded while the program ran (``prepare``)."""
    env = spied_env(tmp_path, AFTER_SPY)
    env |= {
        "HAWKWATCH_HOME": str(tmp_path / "home"),
        "SPY_FILE": str(tmp_path / "after"),
    }
    done = run_supervised(tmp_path, env, sys.executable, "-c", "pass")
    assert done.returncode == 0, done.stderr
    assert "hawkwatch: session" in done.stderr
    assert ast.literal_eval((tmp_path / "after").read_text()) == ["<the program ended>"]


EXIT_SPY = (  # a sitecustomize: which of pathlib and re the supervisor has loaded as it leaves
    "import atexit, os, sys\n"
    "if '_HAWKWATCH_PYTHON' not in os.environ:\n"  # the supervisor, not its program
    "    loaded = lambda: sorted(m for m in ('pathlib', 're') if m in sys.modules)\n"
    "    atexit.register(lambda: sys.stderr.write(f'loaded {loaded()}\\n'))\n"
)


def test_a_program_without_an_agent_leaves_the_supervisor_nothing_to_load(
    tmp_path: Path,
) -> None:
    """``HAWKWATCH_ENABLED=false``: no session, so the supervisor imports neither ``pathlib``
    nor ``re`` after the program (nor before: its exit functions run as it leaves)."""
    env = spied_env(tmp_path, EXIT_SPY)
    env |= {
        "HAWKWATCH_HOME": str(tmp_path / "home"),
        "HAWKWATCH_ENABLED": "false",
    }
    done = run_supervised(tmp_path, env, sys.executable, "-c", "pass")
    assert done.returncode == 0, done.stderr
    assert "loaded []" in done.stderr.splitlines(), done.stderr


def test_the_supervisor_classifies_earlier_sessions_while_the_program_runs(
    tmp_path: Path,
) -> None:
    """Under ``hawkwatch run`` the agent leaves earlier sessions to the supervisor."""
    env = clean_env()
    env["HAWKWATCH_HOME"] = str(tmp_path / "home")
    killed = subprocess.run(  # a process that ends without a word: os._exit, no supervisor
        [sys.executable, "-c", "import hawkwatch, os; hawkwatch.start(); os._exit(3)"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert killed.returncode == 3, killed.stderr
    (earlier,) = (tmp_path / "home" / "sessions").iterdir()
    assert not (earlier / "exit-classified").exists()
    done = run_supervised(tmp_path, env, sys.executable, "-c", "print('ran')")
    assert done.returncode == 0, done.stderr
    verdicts = {
        session.name: [(c.source, c.kind, c.exit_code) for c in classifications(session)]
        for session in list_sessions(tmp_path / "home" / "sessions")
    }
    own = next(name for name in verdicts if name != earlier.name)
    assert verdicts[earlier.name] == [("next-start", "exit-code", 3)]
    assert verdicts[own] == [("supervisor", "clean", 0)]


def run_supervised(
    folder: Path, env: dict[str, str], *program: str
) -> subprocess.CompletedProcess[str]:
    """``hawkwatch run -- PROGRAM`` started from ``folder``, as from a user's shell."""
    script = Path(sys.executable).with_name("hawkwatch")
    return subprocess.run(
        [str(script), "run", "--", *program], env=env, cwd=folder, capture_output=True, text=True
    )


def classifications(session: Session) -> list[ExitClassification]:
    return decode_all(session.records().records).of(ExitClassification)


def test_a_once_job_runs_one_time_on_the_scheduler_thread() -> None:
    scheduler = Scheduler(on_error=lambda owner, exc: None)
    ran: list[str] = []
    ticks: list[int] = []
    scheduler.once(lambda: ran.append(threading.current_thread().name), owner=object())
    scheduler.every(0.01, lambda: ticks.append(1), owner=object())
    scheduler.start()
    try:
        assert wait_for(lambda: len(ticks) >= 5)  # long after the one-shot was due
    finally:
        assert scheduler.stop()
    assert ran == ["hawkwatch-scheduler"]


def test_run_still_refuses_a_typo_in_the_environment(tmp_path: Path) -> None:
    """A ``HAWKWATCH_*`` variable other than ``HAWKWATCH_HOME``: the config is checked before
    the spawn, and a typo stops the program before its code runs."""
    env = clean_env()
    env |= {"HAWKWATCH_HOME": str(tmp_path / "home"), "HAWKWATCH_GC_TRESHOLD_MS": "5"}
    done = run_supervised(tmp_path, env, sys.executable, "-c", "print('ran')")
    assert done.returncode == 2
    assert "HAWKWATCH_GC_TRESHOLD_MS" in done.stderr and "ran" not in done.stdout
    assert not (tmp_path / "home").exists()  # nothing started


def test_run_still_refuses_a_typo_in_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "hawkwatch.toml").write_text("[gc]\ntreshold_ms = 5\n")
    env = clean_env()
    env["HAWKWATCH_HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-m", "hawkwatch", "run", "--", sys.executable, "-c", "print('ran')"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "gc.treshold_ms" in done.stderr and "ran" not in done.stdout


def test_retention_is_applied_even_by_a_process_that_ends_at_once(tmp_path: Path) -> None:
    """Retention runs on the agent's thread after start; a process that ends first does it
    at exit, so a loop of short runs never piles up sessions."""
    env = clean_env()
    env |= {"HAWKWATCH_HOME": str(tmp_path / "home"), "HAWKWATCH_SESSIONS_KEEP": "2"}
    for _ in range(4):
        done = subprocess.run(
            [sys.executable, "-c", "import hawkwatch; hawkwatch.start()"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
    assert len(list((tmp_path / "home" / "sessions").iterdir())) == 2


def test_a_named_command_is_parsed_by_its_own_parser_alone() -> None:
    """``hawkwatch run`` sets up only ``run``'s parser before spawning; an unknown command
    still gets the usage error listing every command."""
    import argparse

    from hawkwatch.cli import COMMANDS, build_parser

    def commands(parser: argparse.ArgumentParser) -> list[str]:
        (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        return list(action.choices)

    assert commands(build_parser(["-v", "run", "--", "true"])) == ["run"]
    everything = [name for name, _, _ in COMMANDS]
    assert commands(build_parser(["nosuch"])) == everything
    assert commands(build_parser(None)) == everything
    done = subprocess.run(
        [sys.executable, "-m", "hawkwatch", "nosuch"], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "invalid choice: 'nosuch'" in done.stderr and "'allocations'" in done.stderr


def test_under_run_the_supervisor_removes_old_sessions_after_a_short_program(
    tmp_path: Path,
) -> None:
    """A loop of short supervised runs keeps ``sessions.keep`` sessions: the supervisor tidies
    after each program ends, the program's exit does not."""
    env = clean_env()
    env |= {"HAWKWATCH_HOME": str(tmp_path / "home"), "HAWKWATCH_SESSIONS_KEEP": "2"}
    for _ in range(4):
        done = run_supervised(tmp_path, env, sys.executable, "-c", "pass")
        assert done.returncode == 0, done.stderr
    assert len(list((tmp_path / "home" / "sessions").iterdir())) == 2


def test_a_program_told_its_supervisor_tidies_leaves_old_sessions_at_its_exit(
    tmp_path: Path,
) -> None:
    """The bootstrap as ``hawkwatch run`` sets it up, without the supervisor: a short program
    removes no session at its exit (the supervisor would, afterwards); without the promise it
    does."""
    from hawkwatch.runenv import (
        BOOTSTRAP_DIR,
        SESSION_FILE_VAR,
        SUPERVISED_VAR,
        TIDY_VAR,
    )

    def run_four(tidies: bool, home: Path) -> int:
        for index in range(4):
            env = clean_env()
            env |= {
                "HAWKWATCH_HOME": str(home),
                "HAWKWATCH_SESSIONS_KEEP": "2",
                "PYTHONPATH": BOOTSTRAP_DIR,
                SUPERVISED_VAR: "1",
                SESSION_FILE_VAR: str(tmp_path / f"announce-{tidies}-{index}"),
            }
            if tidies:
                env[TIDY_VAR] = "1"
            done = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "import os; assert os.environ.get('_HAWKWATCH_SUPERVISOR_TIDIES') is None",
                ],
                env=env,
                cwd=tmp_path,
                capture_output=True,
                text=True,
            )
            assert done.returncode == 0, done.stderr
        return len(list((home / "sessions").iterdir()))

    assert run_four(True, tmp_path / "promised") == 4
    assert run_four(False, tmp_path / "alone") == 2


def test_a_supervised_start_compiles_no_pattern_only_readers_use(tmp_path: Path) -> None:
    """Escaped values and frame texts are parsed by readers (the report, the supervisor): their
    patterns are compiled then, not at every agent start."""
    from hawkwatch.runenv import BOOTSTRAP_DIR, SESSION_FILE_VAR, SUPERVISED_VAR, TIDY_VAR

    env = clean_env()
    env |= {
        "HAWKWATCH_HOME": str(tmp_path / "home"),
        "PYTHONPATH": BOOTSTRAP_DIR,
        SUPERVISED_VAR: "1",
        SESSION_FILE_VAR: str(tmp_path / "announce"),
        TIDY_VAR: "1",
    }
    program = (
        "import json, sys\n"
        "from hawkwatch.agent.api import current_agent\n"
        "from hawkwatch.model import profile\n"
        "from hawkwatch.store import records\n"
        "assert current_agent() is not None\n"
        "patterns = (records._unescape_patterns, profile._frame_patterns)\n"
        "print(json.dumps([p.cache_info().currsize for p in patterns]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [0, 0]


def test_help_is_wrapped_to_the_terminal_width_argparse_would_use() -> None:
    """The supervisor's help formatter reads the width itself (``COLUMNS``, as
    ``shutil.get_terminal_size`` does) rather than importing ``shutil`` before the spawn."""
    widths = {}
    for columns in ("60", "140"):
        env = {**os.environ, "COLUMNS": columns}
        done = subprocess.run(
            [sys.executable, "-m", "hawkwatch", "run", "--help"],
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        widths[columns] = max(len(line) for line in done.stdout.splitlines())
    assert widths["60"] <= 58 < widths["140"] <= 138


def test_a_supervised_program_starts_without_typing_and_with_the_collector_on(
    tmp_path: Path,
) -> None:
    """``hawkwatch run``'s program: the agent loaded no ``typing`` (its modules import it for
    type checkers only), started with the cyclic collector paused and frozen what it made, and
    gave the collector back on before the program's first line."""
    env = clean_env()
    env["HAWKWATCH_HOME"] = str(tmp_path / "home")
    # From 3.13 pathlib no longer imports urllib.parse (and ipaddress): the agent does not either.
    heavy = ["typing", "signal"]
    if sys.version_info >= (3, 13):
        heavy += ["urllib.parse", "ipaddress"]
    program = (
        "import gc, json, sys\n"
        "from hawkwatch.agent.api import current_agent\n"
        f"loaded = [m for m in {heavy!r} if m in sys.modules]\n"
        "print(json.dumps([current_agent() is not None, loaded,"
        " gc.isenabled(), gc.get_freeze_count() > 1000]))\n"
    )
    hawkwatch = str(Path(sys.executable).with_name("hawkwatch"))
    done = subprocess.run(
        [hawkwatch, "run", "--", sys.executable, "-c", program],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [True, [], True, True]


# What a start leaves out (docs/agent.md, "Start-up"): pathlib (with fnmatch, re, enum and, up
# to 3.12, urllib.parse and ipaddress), json (its decoder imports re), typing, signal, importlib
# (and its warnings), and the modules whose few C names the agent takes from their C cores.
LEFT_OUT = (
    "pathlib", "fnmatch", "re", "enum", "json", "urllib.parse", "ipaddress", "typing", "signal",
    "importlib", "warnings", "weakref", "queue", "heapq", "struct",
)  # fmt: skip

LOADED = f"sorted(m for m in {list(LEFT_OUT)!r} if m in sys.modules)"
PROBE = (
    "import atexit, sys\n"
    "from hawkwatch.agent import runtime\n"
    f"print({LOADED})\n"
    "def after_the_agent():\n"
    f"    print({LOADED})\n"
    "atexit.unregister(runtime.at_exit)\n"
    "atexit.register(after_the_agent)\n"  # atexit runs the last registered first: after it
    "atexit.register(runtime.at_exit)\n"
)


@pytest.mark.parametrize("how", ["hawkwatch run", "hawkwatch.start()"])
def test_a_start_loads_no_pathlib_json_re_typing_or_signal(tmp_path: Path, how: str) -> None:
    """At the program's first line and after the agent's exit hook: none of ``LEFT_OUT`` that
    a plain interpreter of this version does not load itself once it imports ``threading``
    (the agent's threads need it; from 3.13 it imports ``warnings``)."""
    env = clean_env()
    env["HAWKWATCH_HOME"] = str(tmp_path / "home")
    (tmp_path / "pyproject.toml").write_text(PROJECT)  # a project's: never parsed
    plain = subprocess.run(
        [sys.executable, "-c", f"import sys, threading\nprint({LOADED})"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert plain.returncode == 0, plain.stderr
    if how == "hawkwatch run":
        hawkwatch = str(Path(sys.executable).with_name("hawkwatch"))
        argv = [hawkwatch, "run", "--", sys.executable, "-c", PROBE]
    else:
        argv = [sys.executable, "-c", "import hawkwatch\nassert hawkwatch.start()\n" + PROBE]
    done = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    itself = set(ast.literal_eval(plain.stdout))
    at_start, at_exit = (ast.literal_eval(line) for line in done.stdout.splitlines())
    assert [m for m in at_start if m not in itself] == []
    assert [m for m in at_exit if m not in itself] == []
