"""The exit vocabulary from evidence: every kind, and no OOM by elimination."""

from __future__ import annotations

import signal

import pytest

from hawkwatch.analysis.exit_classify import ExitFacts, classify_exit
from hawkwatch.model.records.crash import EXIT_KINDS

SIGKILL = int(signal.SIGKILL)


@pytest.mark.parametrize(
    ("facts", "kind", "code", "number"),
    [
        (ExitFacts(returncode=0), "clean", 0, None),
        (ExitFacts(returncode=3), "exit-code", 3, None),
        (ExitFacts(returncode=1, fatal_exception="ValueError"), "exception", 1, None),
        (ExitFacts(returncode=-11, fatal_signal="SIGSEGV"), "fatal-signal", None, 11),
        (ExitFacts(returncode=-int(signal.SIGTERM)), "killed", None, int(signal.SIGTERM)),
        (ExitFacts(returncode=-SIGKILL), "killed", None, SIGKILL),
        (
            ExitFacts(returncode=-SIGKILL, oom_kill_before=0, oom_kill_after=1),
            "oom-killed",
            None,
            SIGKILL,
        ),
        (ExitFacts(returncode=-SIGKILL, hang=True), "hang-killed", None, SIGKILL),
        (ExitFacts(agent_exit={"reason": "sys.exit", "exit_code": 0}), "clean", 0, None),
        (ExitFacts(agent_exit={"reason": "sys.exit", "exit_code": 2}), "exit-code", 2, None),
        (ExitFacts(agent_exit={"reason": "unknown", "exit_code": None}), "clean", 0, None),
        (
            ExitFacts(agent_exit={"reason": "uncaught-exception", "exit_code": 1}),
            "exception",
            1,
            None,
        ),
        (ExitFacts(os_exit_code=4), "exit-code", 4, None),
        (ExitFacts(fatal_signal="SIGABRT"), "fatal-signal", None, int(signal.SIGABRT)),
        (ExitFacts(oom_kill_before=2, oom_kill_after=3), "oom-killed", None, SIGKILL),
        (ExitFacts(kernel_oom_line="Killed process 7 (python)"), "oom-killed", None, SIGKILL),
        (ExitFacts(hang=True), "hang-killed", None, None),
        (ExitFacts(boot_id_then="a" * 36, boot_id_now="b" * 36), "reboot", None, None),
        (ExitFacts(), "killed", None, None),
        (ExitFacts(has_agent_evidence=False), "unknown", None, None),
        (ExitFacts(fatal_signals_watched=False), "unknown", None, None),
    ],
)
def test_each_kind_from_its_evidence(
    facts: ExitFacts, kind: str, code: int | None, number: int | None
) -> None:
    verdict = classify_exit(facts)
    assert (verdict.kind, verdict.exit_code, verdict.signal) == (kind, code, number)
    assert verdict.kind in EXIT_KINDS
    assert verdict.evidence  # every verdict says why


def test_oom_is_never_decided_by_elimination() -> None:
    unchanged = ExitFacts(returncode=-SIGKILL, oom_kill_before=1, oom_kill_after=1, memory_level=95)
    verdict = classify_exit(unchanged)
    assert verdict.kind == "killed"
    assert any("no OOM evidence" in item for item in verdict.evidence)


def test_oom_evidence_names_the_counter_kernel_line_and_level() -> None:
    facts = ExitFacts(
        returncode=-SIGKILL,
        oom_kill_before=0,
        oom_kill_after=1,
        oom_cgroup="/sys/fs/cgroup/app",
        kernel_oom_line="Memory cgroup out of memory: Killed process 42 (python)",
        memory_level=95,
    )
    assert classify_exit(facts).evidence == (
        "hawkwatch run saw the process killed by SIGKILL",
        "memory cgroup of /sys/fs/cgroup/app oom_kill counter grew 0 -> 1",
        "kernel log: Memory cgroup out of memory: Killed process 42 (python)",
        "last memory level 95% of the limit",
    )


def test_a_fatal_signal_status_wins_over_oom_counters() -> None:
    facts = ExitFacts(returncode=-11, oom_kill_before=0, oom_kill_after=5)
    assert classify_exit(facts).kind == "fatal-signal"
