"""Programs that never start (no such script, no such module) leave no session behind.

Each start makes a session, and only the newest ``sessions.keep`` are kept: a script run in a
loop with a typo in its path would otherwise push every real session out of retention.
"""

from __future__ import annotations

import sys

from tests.e2e.conftest import Runner


def test_failed_starts_leave_no_session_and_push_no_real_one_out(runner: Runner) -> None:
    real = runner.script("app.py", "print('real work')\n")
    for _ in range(3):
        done = runner.hawkwatch("run", "--", sys.executable, str(real), HAWKWATCH_SESSIONS_KEEP="3")
        assert done.returncode == 0, done.stderr
    kept = [s.name for s in runner.sessions()]
    assert len(kept) == 3

    missing = str(runner.cwd / "nonexistent.py")
    for _ in range(2):
        no_script = runner.hawkwatch(
            "run", "--", sys.executable, missing, HAWKWATCH_SESSIONS_KEEP="3"
        )
        assert no_script.returncode == 2  # Python's own status for a script it cannot open
        assert "can't open file" in no_script.stderr
        assert "did not start" in no_script.stderr and "removed" in no_script.stderr
        no_module = runner.hawkwatch("run", "-m", "nosuchmodule", HAWKWATCH_SESSIONS_KEEP="3")
        assert no_module.returncode == 1
        assert "No module named nosuchmodule" in no_module.stderr
        assert "did not start" in no_module.stderr

    assert [s.name for s in runner.sessions()] == kept


def test_a_program_that_starts_and_fails_keeps_its_session(runner: Runner) -> None:
    script = runner.script("app.py", "raise SystemExit('bad input')\n")
    done = runner.hawkwatch("run", "--", sys.executable, str(script))
    assert done.returncode == 1
    assert "bad input" in done.stderr
    assert "did not start" not in done.stderr
    assert len(runner.sessions()) == 1  # its own code ran: a real run, however short
