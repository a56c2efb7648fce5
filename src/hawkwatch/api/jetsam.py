"""``hawkwatch jetsam`` as a function: who iOS killed for memory, and the app's memory limit."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hawkwatch.api.session import PathLike
from hawkwatch.errors import FormatError
from hawkwatch.formats.jetsam import read_jetsam
from hawkwatch.model import Skipped
from hawkwatch.model.jetsam import JetsamEvent, JetsamProcess


@dataclass(frozen=True, slots=True)
class JetsamResult:
    """A JetsamEvent, and the app in it (None when it is not there)."""

    source: str
    event: JetsamEvent
    app: JetsamProcess | None
    #: the name or UUID asked for, if any
    asked: str | None
    skipped: tuple[Skipped, ...]


def jetsam(path: PathLike, app: str | None = None) -> JetsamResult:
    """Read a JetsamEvent ``.ips`` file and find the app: by process name or main-image UUID,
    else the process killed at its per-process limit (the frontmost one first)."""
    target = Path(path).expanduser()
    if target.is_file() and target.stat().st_size == 0:
        raise FormatError(str(target), "empty file; expected a JetsamEvent .ips report")
    parsed = read_jetsam(target)
    event = parsed.value
    return JetsamResult(str(target), event, event.app(app), app, tuple(parsed.skipped))
