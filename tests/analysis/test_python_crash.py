"""Python crashes group by the iOS grouping's own code path."""

from __future__ import annotations

from hawkwatch.analysis.crash_grouping import fingerprint, group_crashes
from hawkwatch.analysis.python_crash import python_fingerprint, to_crash_report
from hawkwatch.model.records import Crash, CrashRecordFrame


def _crash(root: str, line: int, message: str = "bad 42", when: float = 1.0) -> Crash:
    return Crash(
        time=when,
        kind="exception",
        fatal=True,
        type="ValueError",
        message=message,
        thread="MainThread",
        frames=(
            CrashRecordFrame(
                function="parse", file=f"{root}/lib/json/decoder.py", line=9, in_app=False
            ),
            CrashRecordFrame(function="Order.load", file=f"{root}/app/orders.py", line=line),
            CrashRecordFrame(function="<module>", file=f"{root}/app/main.py", line=3),
        ),
    )


def test_fingerprint_is_the_crash_groupings() -> None:
    crash = _crash("/srv", 10)
    key = python_fingerprint(crash)
    assert key == fingerprint(to_crash_report(crash))
    assert key.variant == "app"
    assert key.components == ("ValueError", "orders.py Order.load", "main.py (module)")
    assert key.title == "ValueError in orders.py Order.load"


def test_same_bug_groups_across_install_folders_lines_and_messages() -> None:
    a = _crash("/srv", 10, "bad 42", 1.0)
    b = _crash("/home/ci/build", 12, "bad 43", 2.0)
    c = Crash(time=3.0, kind="signal", fatal=True, type="SIGSEGV", frames=a.frames)
    groups = group_crashes(
        [("a", to_crash_report(a)), ("b", to_crash_report(b)), ("c", to_crash_report(c))]
    )
    assert [g.sources for g in groups] == [["a", "b"], ["c"]]
    assert groups[1].fingerprint.components[0] == "SIGSEGV"


def test_only_library_frames_fall_back_to_system_frames() -> None:
    crash = Crash(
        time=1.0,
        kind="exception",
        fatal=True,
        type="KeyError",
        frames=(
            CrashRecordFrame(function="get", file="/usr/lib/python3.11/x.py", line=1, in_app=False),
        ),
    )
    key = python_fingerprint(crash)
    assert (key.variant, key.components) == ("system", ("KeyError", "x.py get"))
