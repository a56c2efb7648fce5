"""Running real programs under hawkwatch in subprocesses, and reading what they recorded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from hawkwatch.model import Record
from hawkwatch.store import Session, list_sessions

HAWKWATCH_SCRIPT = Path(sys.executable).with_name("hawkwatch")


@dataclass
class Runner:
    """Runs commands with an isolated HAWKWATCH_HOME and a working folder of its own."""

    home: Path
    cwd: Path

    @property
    def root(self) -> Path:
        return self.home / "sessions"

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("HAWKWATCH_", "_HAWKWATCH"))
        }
        env["HAWKWATCH_HOME"] = str(self.home)
        env.update(extra)
        return env

    def script(self, name: str, source: str) -> Path:
        path = self.cwd / name
        path.write_text(source)
        return path

    def hawkwatch(
        self, *args: str, timeout: float = 120, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """``hawkwatch ARGS`` through the installed console script."""
        return subprocess.run(
            [str(HAWKWATCH_SCRIPT), *args],
            cwd=self.cwd,
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def module(
        self, *args: str, timeout: float = 120, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """``python -m hawkwatch ARGS``."""
        return subprocess.run(
            [sys.executable, "-m", "hawkwatch", *args],
            cwd=self.cwd,
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def python(
        self, *args: str, timeout: float = 120, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """A plain ``python ARGS`` (for programs calling hawkwatch.start() themselves)."""
        return subprocess.run(
            [sys.executable, *args],
            cwd=self.cwd,
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def sessions(self) -> list[Session]:
        return list_sessions(self.root)

    def only_session(self) -> Session:
        sessions = self.sessions()
        assert len(sessions) == 1, sessions
        return sessions[0]


@pytest.fixture
def runner(tmp_path: Path) -> Runner:
    work = tmp_path / "work"
    work.mkdir()
    return Runner(home=tmp_path / "home", cwd=work)


def by_collection(session: Session) -> dict[str, list[Record]]:
    grouped: dict[str, list[Record]] = {}
    for record in session.records().records:
        grouped.setdefault(record.collection, []).append(record)
    return grouped


def values(records: list[Record]) -> list[float]:
    return [float(r.value) for r in records]


def json_of(records: list[Record]) -> list[dict[str, object]]:
    return [json.loads(r.value) for r in records]
