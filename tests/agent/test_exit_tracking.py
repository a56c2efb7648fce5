"""Interrupts deferred on the exit path: Python's handler swapped, an app's own left in charge."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator

import pytest

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
