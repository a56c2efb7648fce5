"""This process's cgroups, read from ``/proc``: which it belongs to, where they are mounted.

Apart from ``sysinfo`` (the memory limit, the resource readers), because the crash monitor's
start needs these alone: the memory cgroup's folder for ``exit-evidence.json``. Folders are
``str`` paths (``store.files.path_text``: what ``str(Path(...))`` gives).
"""

from __future__ import annotations

import os

from hawkwatch.model.values import Value
from hawkwatch.store.files import path_join, path_text


def memberships(path: str | os.PathLike[str]) -> dict[str, str]:
    """Controller → cgroup path; the v2 unified hierarchy is under the key ''."""
    found: dict[str, str] = {}
    try:
        lines = read_text(path).splitlines()
    except OSError:
        return found
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _id, controllers, cgroup_path = parts
        if not controllers:
            found[""] = cgroup_path
        for controller in controllers.split(","):
            if controller:
                found[controller] = cgroup_path
    return found


class Mount(Value):
    """A cgroup hierarchy's mount: the cgroup path it shows (``root``) at ``point``."""

    __slots__ = ("point", "root")

    def __init__(self, root: str, point: str) -> None:
        self.root = root
        self.point = point


def mounts(path: str | os.PathLike[str]) -> dict[str, Mount]:
    """'cgroup2' → its mount, and each v1 controller ('memory') → its mount."""
    mounts: dict[str, Mount] = {}
    try:
        lines = read_text(path).splitlines()
    except OSError:
        return mounts
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        mount = Mount(root=fields[3], point=path_text(fields[4]))
        if tail[0] == "cgroup2":
            mounts.setdefault("cgroup2", mount)
        elif tail[0] == "cgroup":
            for option in tail[2].split(","):
                mounts.setdefault(option, mount)
    return mounts


def resolve(mount: Mount, cgroup_path: str) -> str | None:
    """The folder of ``cgroup_path`` under ``mount``, else the mount's own folder, else None."""
    relative = os.path.relpath(cgroup_path, mount.root) if mount.root != "/" else cgroup_path
    if not relative.startswith(".."):
        candidate = path_join(mount.point, relative.lstrip("/"))
        if os.path.isdir(candidate):
            return candidate
    return mount.point if os.path.isdir(mount.point) else None  # a namespace shows its own root


def read_text(path: str | os.PathLike[str]) -> str:
    """``Path(path).read_text()``."""
    with open(path) as f:
        return f.read()
