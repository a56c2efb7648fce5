"""``once_imported``: the network monitor instruments each client library once, on the agent's
``AfterImport`` finder, whether it was imported before the agent started or after."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from hawkwatch.agent.plugins.network import once_imported
from hawkwatch.model import collections as c
from hawkwatch.model.records import NetworkTransaction
from hawkwatch.store import Session


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on ``sys.path`` for modules the tests write; they leave ``sys.modules`` after."""
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [n for n in sys.modules if n.startswith("hw_netimp_")]:
        del sys.modules[name]


def test_modules_are_instrumented_once_whenever_they_are_imported(modules: Path) -> None:
    for name in ("hw_netimp_early", "hw_netimp_late"):
        (modules / f"{name}.py").write_text("VALUE = 1\n")
    importlib.import_module("hw_netimp_early")
    seen: list[tuple[str, int]] = []
    errors: list[Exception] = []

    def note(module: ModuleType) -> None:
        seen.append((module.__name__, module.VALUE))

    hook = once_imported({"hw_netimp_early": note, "hw_netimp_late": note}, errors.append)
    assert seen == [("hw_netimp_early", 1)]  # already imported: at once
    assert hook is not None and hook in sys.meta_path
    importlib.import_module("hw_netimp_late")
    assert seen == [("hw_netimp_early", 1), ("hw_netimp_late", 1)]
    assert hook not in sys.meta_path  # nothing left to wait for
    del sys.modules["hw_netimp_late"]
    importlib.import_module("hw_netimp_late")  # imported again: not instrumented twice
    assert len(seen) == 2 and errors == []


def test_a_failing_callback_is_reported_and_the_import_succeeds(modules: Path) -> None:
    (modules / "hw_netimp_odd.py").write_text("VALUE = 2\n")
    errors: list[Exception] = []

    def broken(module: ModuleType) -> None:
        raise AttributeError("an unknown version of the library")

    hook = once_imported({"hw_netimp_odd": broken}, errors.append)
    assert importlib.import_module("hw_netimp_odd").VALUE == 2
    assert [str(e) for e in errors] == ["an unknown version of the library"]
    assert hook not in sys.meta_path


def test_nothing_waits_when_every_module_is_already_imported() -> None:
    seen: list[str] = []
    before = list(sys.meta_path)
    assert once_imported({"json": lambda m: seen.append(m.__name__)}, print) is None
    assert seen == ["json"] and sys.meta_path == before


def test_a_program_that_imports_socket_after_start_has_its_requests_timed(tmp_path: Path) -> None:
    """The agent no longer imports ``socket`` at start; the socket layer is wrapped when the
    program imports it, so DNS and TCP are still timed (``phases.dns``, ``phases.tcp``)."""
    program = (
        "import sys, threading\n"
        "import hawkwatch\n"
        "assert hawkwatch.start(**{'stall.enabled': False})\n"
        "assert 'socket' not in sys.modules  # nothing of the agent's imported it\n"
        "import http.server, http.client\n"
        "handler = http.server.SimpleHTTPRequestHandler\n"
        "server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)\n"
        "threading.Thread(target=server.serve_forever, daemon=True).start()\n"
        "conn = http.client.HTTPConnection('localhost', server.server_address[1], timeout=10)\n"
        "conn.request('GET', '/')\n"
        "assert conn.getresponse().read()\n"
        "conn.close()\n"
        "server.shutdown()\n"
        "print(hawkwatch.agent.current_agent().session.path)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    env["HAWKWATCH_HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-c", program], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    folder = Path(done.stdout.strip())
    (record,) = [
        NetworkTransaction.from_record(r)
        for r in Session.open(folder).records(c.NETWORK_TRANSACTION)
    ]
    assert (record.library, record.method, record.status) == ("http.client", "GET", 200)
    assert record.phases_ms.dns is not None and record.phases_ms.tcp is not None
