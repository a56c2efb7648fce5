"""The agent's module loggers import ``logging`` at their first message."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hawkwatch._lazylog import lazy_logger


def test_a_lazy_logger_logs_through_the_named_logger(caplog: pytest.LogCaptureFixture) -> None:
    log = lazy_logger("hawkwatch.test.lazy")
    with caplog.at_level("WARNING", logger="hawkwatch.test.lazy"):
        log.warning("disk %s is full", "/x")
        log.debug("not shown")
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("hawkwatch.test.lazy", "WARNING", "disk /x is full")
    ]


def test_logging_is_imported_at_the_first_message_only() -> None:
    program = (
        "import sys\n"
        "from hawkwatch._lazylog import lazy_logger\n"
        "log = lazy_logger('x')\n"
        "print('logging' in sys.modules)\n"
        "log.warning('now')\n"
        "print('logging' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert done.stdout.split() == ["False", "True"]
    assert "now" in done.stderr  # logging's last resort printed it
