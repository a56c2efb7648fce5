"""Interrupts deferred on the exit path: Python's handler swapped, an app's own left in charge."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator

import pytest

from hawkwatch.agent import exit_tracking
from hawkwatch.agent.exit_tracking import InterruptsDeferred


@pytest.fixture
def sigint_handler() -> Iterator[None]:
    previous = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("sigint_handler")
def test_an_interrupt_in_the_block_is_noted_and_pythons_handler_comes_back() -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with InterruptsDeferred() as deferred:
        signal.raise_signal(signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    assert deferred.interrupted
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.usefixtures("sigint_handler")
def test_an_apps_own_handler_stays_in_charge_and_gets_every_interrupt() -> None:
    seen: list[int] = []

    def apps_handler(signum: int, _frame: object) -> None:
        seen.append(signum)

    signal.signal(signal.SIGINT, apps_handler)
    with InterruptsDeferred() as deferred:
        assert signal.getsignal(signal.SIGINT) is apps_handler
        signal.raise_signal(signal.SIGINT)
    assert seen == [signal.SIGINT] and not deferred.interrupted
    assert signal.getsignal(signal.SIGINT) is apps_handler


@pytest.mark.usefixtures("sigint_handler")
def test_an_interrupt_caught_while_giving_an_apps_handler_back_is_raised_again_for_it() -> None:
    seen: list[int] = []

    def apps_handler(signum: int, _frame: object) -> None:
        seen.append(signum)

    deferred = InterruptsDeferred()
    signal.signal(signal.SIGINT, deferred._note)  # as if it came between the swap and the return
    deferred._note(signal.SIGINT, None)
    deferred._give_back(apps_handler)
    assert seen == [signal.SIGINT] and not deferred.interrupted
    assert signal.getsignal(signal.SIGINT) is apps_handler


def test_other_threads_change_nothing() -> None:
    outcome: list[bool] = []

    def in_a_thread() -> None:
        with InterruptsDeferred() as deferred:
            outcome.append(deferred.previous is None)

    before = signal.getsignal(signal.SIGINT)
    worker = threading.Thread(target=in_a_thread)
    worker.start()
    worker.join()
    assert outcome == [True] and signal.getsignal(signal.SIGINT) is before


def test_the_main_modules_frame_is_found_on_the_main_thread_without_current_frames(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """From the main thread its own stack: ``sys._current_frames()`` can hang the process when a
    collection falls in it (CPython gh-106883, before 3.11.9 and 3.12.3); another thread still
    finds the main thread's frame through it."""
    found_elsewhere: list[object] = []
    worker = threading.Thread(target=lambda: found_elsewhere.append(
        exit_tracking._main_module_frame()))  # fmt: skip
    worker.start()
    worker.join()

    def current_frames() -> dict[int, object]:
        raise AssertionError("sys._current_frames() called on the main thread")

    monkeypatch.setattr(exit_tracking.sys, "_current_frames", current_frames)
    frame = exit_tracking._main_module_frame()
    assert frame is not None and frame.f_code.co_name == "<module>"
    assert frame.f_globals.get("__name__") == "__main__"
    assert found_elsewhere == [frame]
