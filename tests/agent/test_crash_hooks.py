"""The crash hooks chain the app's, never replace them, and leave them as they were."""

from __future__ import annotations

import sys
import threading
from typing import Any

import pytest

from hawkwatch.agent.crash_capture import build_crash, fit
from hawkwatch.agent.crash_hooks import CrashHooks


class Sink:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, bool]] = []
        self.exits: list[int] = []

    def on_exception(
        self, exc: BaseException, *, source: str, fatal: bool, thread: threading.Thread | None
    ) -> None:
        self.seen.append((type(exc).__name__, source, fatal))

    def on_os_exit(self, code: int) -> None:
        self.exits.append(code)


@pytest.fixture
def app_hooks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    monkeypatch.setattr(sys, "excepthook", lambda *a: calls.append("app excepthook"))
    monkeypatch.setattr(threading, "excepthook", lambda a: calls.append("app thread hook"))
    monkeypatch.setattr(sys, "unraisablehook", lambda u: calls.append("app unraisable"))
    return calls


def test_every_hook_records_then_calls_the_apps(app_hooks: list[str]) -> None:
    sink = Sink()
    hooks = CrashHooks(sink)
    hooks.install()
    try:
        try:
            raise ValueError("main")
        except ValueError as exc:
            sys.excepthook(ValueError, exc, exc.__traceback__)

        def fail() -> None:
            raise KeyError("thread")

        worker = threading.Thread(target=fail)
        worker.start()
        worker.join()

        class Broken:
            def __del__(self) -> None:
                raise OSError("finalizer")

        Broken()
    finally:
        hooks.uninstall()
    assert sink.seen == [
        ("ValueError", "sys.excepthook", True),
        ("KeyError", "threading.excepthook", False),
        ("OSError", "sys.unraisablehook", False),
    ]
    assert app_hooks == ["app excepthook", "app thread hook", "app unraisable"]


def test_uninstall_restores_the_apps_hooks(app_hooks: list[str]) -> None:
    before = (sys.excepthook, threading.excepthook, sys.unraisablehook)
    hooks = CrashHooks(Sink())
    hooks.install()
    assert sys.excepthook is not before[0]
    hooks.uninstall()
    assert (sys.excepthook, threading.excepthook, sys.unraisablehook) == before


def test_a_hook_installed_after_ours_keeps_ours_in_the_chain(app_hooks: list[str]) -> None:
    sink = Sink()
    hooks = CrashHooks(sink)
    hooks.install()
    ours = sys.excepthook

    def later(*args: Any) -> None:
        app_hooks.append("later tool")
        ours(*args)

    sys.excepthook = later
    hooks.uninstall()  # cannot take ours out without dropping "later": it becomes a pass-through
    assert sys.excepthook is later
    try:
        raise ValueError("x")
    except ValueError as exc:
        sys.excepthook(ValueError, exc, exc.__traceback__)
    assert sink.seen == []
    assert app_hooks == ["later tool", "app excepthook"]


def test_a_failing_sink_never_stops_the_apps_hook(app_hooks: list[str]) -> None:
    class Failing(Sink):
        def on_exception(self, *args: Any, **kwargs: Any) -> None:
            raise RuntimeError("hawkwatch bug")

    hooks = CrashHooks(Failing())
    hooks.install()
    try:
        try:
            raise ValueError("main")
        except ValueError as exc:
            sys.excepthook(ValueError, exc, exc.__traceback__)
    finally:
        hooks.uninstall()
    assert app_hooks == ["app excepthook"]


def test_exception_groups_and_context_are_chained() -> None:
    try:
        try:
            raise KeyError("inner")
        except KeyError:
            raise ExceptionGroup("batch", [ValueError("a"), TypeError("b")]) from None
    except ExceptionGroup as exc:
        crash = build_crash(exc, source="test", fatal=True, thread=None)
    assert crash.type == "ExceptionGroup"
    assert [(c.type, c.relation) for c in crash.causes] == [
        ("ValueError", "group"),
        ("TypeError", "group"),
    ]
    try:
        try:
            raise KeyError("first")
        except KeyError:
            raise ValueError("while handling")  # noqa: B904 - the implicit context is the point
    except ValueError as exc:
        crash = build_crash(exc, source="test", fatal=True, thread=None)
    assert [(c.type, c.relation, c.message) for c in crash.causes] == [
        ("KeyError", "context", "'first'")
    ]


def test_a_huge_crash_is_shrunk_to_one_store_line() -> None:
    def deep(n: int) -> None:
        if n == 0:
            raise RecursionError("x" * 20_000)
        deep(n - 1)

    try:
        deep(200)
    except RecursionError as exc:
        crash = build_crash(exc, source="test", fatal=True, thread=None)
    assert crash.truncated
    assert len(crash.encode_value()) < 16_254
    assert crash.frames[0].function.endswith("<locals>.deep")
    assert fit(crash) == crash
