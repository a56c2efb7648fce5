"""Print the corpus counts at the end of the run, whatever the verbosity."""

from __future__ import annotations

import pytest

from tests.fuzz.harness import SUMMARY


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if SUMMARY:
        terminalreporter.section("fuzz corpus")
        for line in SUMMARY:
            terminalreporter.write_line(line)
