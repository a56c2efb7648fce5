"""``os.exec*``: the session ends before the program is replaced, and goes on if the exec fails."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

import hawkwatch
from hawkwatch.agent import current_agent
from hawkwatch.analysis.exit_classify import ExitFacts, classify_exit
from hawkwatch.formats.hawkeye_cpu import parse_highload
from hawkwatch.model import collections as c
from hawkwatch.model.profile import CallNode
from hawkwatch.model.records import ExitState
from hawkwatch.model.stack import PyFrame
from hawkwatch.store import Session
from tests.builders import run_script, wait_for

pytestmark = pytest.mark.usefixtures("stopped_agent")

QUIET = {"resources_enabled": False, "imports_enabled": False, "gc_enabled": False}

# Burns until the high-load monitor holds an episode 1.5 s long, then execs at once: the episode
# is still open (it ends only after checks below the threshold), and what it became since its
# last periodic write (at 1 s) exists only in the agent's memory. The monitor's clock is the
# process's CPU time, so a loaded machine cannot keep the burn from counting as busy.
EXEC_RIGHT_AFTER_A_BURN = textwrap.dedent(
    """
    import os, sys, time
    import hawkwatch
    from hawkwatch.agent import current_agent
    from hawkwatch.agent.plugins import cpu_highload

    cpu_highload.CLOCK = time.process_time
    hawkwatch.start(cpu_highload_min_duration_s=1, cpu_check_interval_s=0.1,
                    cpu_check_interval_busy_s=0.1, resources_enabled=False,
                    imports_enabled=False, gc_enabled=False, stall_enabled=False)
    agent = current_agent()
    print(agent.session.path, flush=True)
    monitor = next(m for m in agent.monitors if isinstance(m, cpu_highload.CpuHighLoadMonitor))

    def burn_before_the_exec():
        while True:
            sum(i * i for i in range(20_000))
            episode = monitor._tracker.episode if monitor._tracker else None
            if episode is not None and episode.last_unix - episode.start_unix >= 1.5:
                return

    burn_before_the_exec()
    episode = monitor._tracker.episode
    print(f"{episode.last_unix - episode.start_unix:.6f}", flush=True)
    os.execv(sys.executable, [sys.executable, "-c", "print('replaced')"])
    """
)


def test_an_exec_right_after_a_burn_keeps_the_open_episode_and_ends_the_session(
    hawkwatch_home: Path, tmp_path: Path
) -> None:
    done = run_script(tmp_path, EXEC_RIGHT_AFTER_A_BURN)
    assert done.returncode == 0, done.stderr
    session_path, lasting_at_exec, replaced = done.stdout.splitlines()
    assert replaced == "replaced"  # the exec happened, as the app asked
    records = Session.open(Path(session_path)).records().records
    episodes = parse_highload(records).value
    assert episodes
    assert max(e.lasting_s for e in episodes) >= float(lasting_at_exec) - 0.01
    assert "burn_before_the_exec" in _functions(episodes[-1].roots)
    [state] = [ExitState.from_record(r) for r in records if r.collection == c.EXIT_STATE]
    assert (state.reason, state.clean, state.source) == ("exec", True, "agent")


def test_a_failed_exec_raises_to_the_app_and_monitoring_goes_on_in_a_new_session(
    hawkwatch_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an earlier start put our wrapper in; the app then wraps it (and calls it), and the next
    # start puts ours in front again: two of ours in the chain, one session ended
    hawkwatch.start(**QUIET)
    hawkwatch.stop()
    apps_calls: list[str] = []
    previous = os.execv

    def apps_own_execv(path: str, argv: list[str]) -> None:
        apps_calls.append(path)
        previous(path, argv)

    monkeypatch.setattr(os, "execv", apps_own_execv)
    hawkwatch.start(**QUIET)
    first = current_agent()
    assert first is not None and first.session is not None
    assert os.execv is not apps_own_execv  # wrapped in front of the app's own

    with pytest.raises(FileNotFoundError):
        os.execv("/nonexistent/hawkwatch-test", ["x"])

    assert apps_calls == ["/nonexistent/hawkwatch-test"]  # the app's wrapper still ran
    second = current_agent()
    assert second is not None and second is not first and second.session is not None
    assert second.session.metadata["parent_session"] == first.session.name
    records = first.session.records(c.EXIT_STATE).records
    assert [ExitState.from_record(r).reason for r in records] == ["exec"]
    hawkwatch.event("after the failed exec")
    session = second.session
    assert wait_for(
        lambda: any("after the failed exec" in r.value for r in session.records().records)
    )


def test_an_exec_without_an_agent_is_passed_through(hawkwatch_home: Path) -> None:
    hawkwatch.start(**QUIET)
    hawkwatch.stop()
    with pytest.raises(FileNotFoundError):
        os.execv("/nonexistent/hawkwatch-test", ["x"])
    assert current_agent() is None  # no session is started by a failed exec of nobody's


@pytest.mark.parametrize("returncode", [0, 3, -9])
def test_a_session_that_ended_in_exec_is_clean_whatever_the_new_program_did(
    returncode: int,
) -> None:
    agent_exit = {"clean": True, "exit_code": None, "reason": "exec", "source": "agent"}
    supervised = classify_exit(ExitFacts(returncode=returncode, agent_exit=agent_exit))
    assert (supervised.kind, supervised.exit_code, supervised.signal) == ("clean", None, None)
    assert "os.exec" in supervised.evidence[0]
    assert f"exit status {returncode} of the program it became" in supervised.evidence[1]
    alone = classify_exit(ExitFacts(agent_exit=agent_exit))
    assert (alone.kind, alone.exit_code) == ("clean", None)


def _functions(roots: list[CallNode]) -> set[str]:
    names: set[str] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if isinstance(node.frame, PyFrame):
            names.add(node.frame.func)
        stack.extend(node.children)
    return names
