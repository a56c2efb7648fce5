"""A real PostgreSQL for the tests: ``initdb`` + ``pg_ctl`` in a temporary folder, loopback only.

Debian's ``postgresql`` package (CI installs it). The server refuses to run as root, so when the
tests are root it runs as the ``postgres`` system user (``runuser``). ``start_postgres`` returns
None with a reason when this machine cannot run one, and the tests say so when they skip.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Postgres:
    folder: Path
    port: int
    bin: Path
    as_user: list[str]

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://hawkwatch@127.0.0.1:{self.port}/hawkwatch"

    def ctl(self, *args: str) -> None:
        subprocess.run([*self.as_user, str(self.bin / "pg_ctl"), "-D", str(self.folder / "data"),
                        "-w", "-t", "60", *args], check=True, capture_output=True)  # fmt: skip

    def start(self) -> None:
        self.ctl("-l", str(self.folder / "log"), "-o",
                 f"-p {self.port} -k {self.folder} -h 127.0.0.1 -F", "start")  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        self.ctl("-m", mode, "stop")

    def restart(self) -> None:
        self.stop("immediate")
        self.start()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_postgres(folder: Path) -> Postgres | str:
    """A running server with a database ``hawkwatch`` owned by a role ``hawkwatch``; or why not."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    initdb = found[-1] if found else shutil.which("initdb")
    if initdb is None:
        return "PostgreSQL is not installed (Debian package 'postgresql')"
    binaries = Path(initdb).parent
    as_user: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            return "running as root without runuser: PostgreSQL refuses root"
        as_user = ["runuser", "-u", "postgres", "--"]
        folder.chmod(0o777)
        shutil.chown(folder, "postgres")
    data = folder / "data"
    try:
        subprocess.run([*as_user, initdb, "-D", str(data), "-U", "postgres", "-A", "trust",
                        "--no-sync", "-E", "UTF8"], check=True, capture_output=True)  # fmt: skip
    except (subprocess.CalledProcessError, OSError) as exc:
        return f"initdb failed: {getattr(exc, 'stderr', b'') or exc}"
    server = Postgres(folder, _free_port(), binaries, as_user)
    server.start()
    psql = [*as_user, str(binaries / "psql"), "-h", "127.0.0.1", "-p", str(server.port),
            "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-q", "-c"]  # fmt: skip
    subprocess.run([*psql, "CREATE ROLE hawkwatch LOGIN"], check=True, capture_output=True)
    subprocess.run([*psql, "CREATE DATABASE hawkwatch OWNER hawkwatch"], check=True,
                   capture_output=True)  # fmt: skip
    return server
