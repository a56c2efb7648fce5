"""What the user sees is about the program, not about hawkwatch: no agent frames in stacks, no
agent imports among the slowest imports, and a normal exit reported as one (code 0)."""

from __future__ import annotations

import json
import sys

import pytest

import hawkwatch
from hawkwatch.model import collections as c
from tests.e2e.conftest import Runner, by_collection, json_of

AGENT_DIR = str(__import__("pathlib").Path(hawkwatch.__file__).parent / "agent")

STACK_INSIDE_A_LOOP = """
import asyncio, json, sys
import hawkwatch
from hawkwatch.agent.stacks import frame_stack

hawkwatch.start()

async def handler():
    return [frame.file for frame in frame_stack(sys._getframe())]

print(json.dumps(asyncio.run(handler())))
"""


def test_stacks_leave_out_the_agents_wrappers(runner: Runner) -> None:
    """The stall monitor wraps ``run_forever``: a flame graph of an asyncio program showed it."""
    script = runner.script("app.py", STACK_INSIDE_A_LOOP)
    done = runner.python(str(script))
    assert done.returncode == 0, done.stderr
    files = json.loads(done.stdout)
    assert any(file.endswith("app.py") for file in files)
    assert any(file.endswith("asyncio/base_events.py") for file in files)  # run_forever itself
    assert not [file for file in files if file.startswith(AGENT_DIR)]


def test_slowest_imports_are_the_programs_not_the_agents(runner: Runner) -> None:
    runner.script("hwslowmod.py", "import time\ntime.sleep(0.05)\n")
    script = runner.script("app.py", "import hwslowmod\nimport time\ntime.sleep(0.8)\n")
    done = runner.hawkwatch("run", "--", sys.executable, str(script))
    assert done.returncode == 0, done.stderr
    imports = [r.key for r in by_collection(runner.only_session())[c.IMPORT_TIME]]
    assert "hwslowmod" in imports
    assert not [name for name in imports if name.startswith("hawkwatch")]
    assert "psutil" not in imports  # imported by the agent's own thread, if at all


@pytest.mark.parametrize(
    ("body", "exit_code", "reason"),
    [
        ("print('fine')\n", 0, "normal"),
        ("def main():\n    return 0\nmain()\n", 0, "normal"),
        ("raise SystemExit(3)\n", None, "unknown"),  # not seen: never taken for a normal end
    ],
)
def test_app_exit_says_how_an_in_code_agent_ended(
    runner: Runner, body: str, exit_code: int | None, reason: str
) -> None:
    script = runner.script("app.py", "import hawkwatch\nhawkwatch.start()\n" + body)
    runner.python(str(script))
    records = by_collection(runner.only_session())
    [app_exit] = [e for e in json_of(records[c.CUSTOM_TIME_EVENT]) if e["event"] == "App::Exit"]
    assert json.loads(str(app_exit["extra"])) == {"exit_code": exit_code, "reason": reason}
    [state] = json_of(records[c.EXIT_STATE])
    assert (state["exit_code"], state["reason"]) == (exit_code, reason)


BUSY_LOOP = """
import asyncio, time

async def crunch():
    deadline = time.perf_counter() + 1.0
    while time.perf_counter() < deadline:
        sum(i * i for i in range(500))

asyncio.run(crunch())
"""


def test_flame_graphs_leave_out_the_agents_wrappers(runner: Runner) -> None:
    script = runner.script("app.py", BUSY_LOOP)
    # in-process: the sampler whose frames include the agent's wrappers, at a fixed 100 Hz (beside
    # py-spy it keeps only its budget share: a few samples a second, none in a short burn)
    done = runner.hawkwatch(
        "run", "--profile", "-c", "profiler.rate_hz=100", "-c", "profiler.engine=in-process",
        "--", sys.executable, str(script),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    session = runner.only_session()
    exported = runner.hawkwatch("profile", str(session.path), "--mode", "wall")
    assert exported.returncode == 0, exported.stderr
    assert "crunch" in exported.stdout and "run_forever" in exported.stdout
    assert "stall_discovery" not in exported.stdout  # its run_forever wrapper
    assert "hawkwatch" not in exported.stdout.replace("hawkwatch-", "")  # no agent file at all
