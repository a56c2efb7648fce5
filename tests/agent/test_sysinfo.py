"""Finding the memory limit from real cgroup-shaped folders, and reading this process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hawkwatch.agent.sysinfo import LinuxReader, find_memory_limit

MB = 1024 * 1024


def _fake_proc(tmp_path: Path, cgroup_lines: str, mount_lines: str) -> tuple[Path, Path]:
    proc_cgroup = tmp_path / "cgroup"
    proc_cgroup.write_text(cgroup_lines)
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(mount_lines)
    return proc_cgroup, mountinfo


def test_cgroup_v2_takes_the_tightest_limit_over_the_ancestors(tmp_path: Path) -> None:
    root = tmp_path / "fs" / "cgroup"
    leaf = root / "system.slice" / "app.service"
    leaf.mkdir(parents=True)
    (root / "system.slice" / "memory.max").write_text(f"{512 * MB}\n")
    (root / "system.slice" / "memory.current").write_text(f"{500 * MB}\n")
    (leaf / "memory.max").write_text(f"{256 * MB}\n")
    (leaf / "memory.current").write_text(f"{100 * MB}\n")
    proc_cgroup, mountinfo = _fake_proc(
        tmp_path,
        "0::/system.slice/app.service\n",
        f"30 23 0:26 / {root} rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
    )
    limit = find_memory_limit(proc_cgroup, mountinfo)
    assert limit.cgroup_version == 2
    assert limit.available(0) == 12 * MB  # the parent has 12 MB left, the leaf 156 MB


def test_cgroup_v2_without_any_limit_falls_through(tmp_path: Path) -> None:
    root = tmp_path / "cg"
    (root / "a").mkdir(parents=True)
    (root / "a" / "memory.max").write_text("max\n")
    proc_cgroup, mountinfo = _fake_proc(
        tmp_path, "0::/a\n", f"30 23 0:26 / {root} rw - cgroup2 cgroup2 rw\n"
    )
    limit = find_memory_limit(proc_cgroup, mountinfo)
    assert limit.cgroup_version == 0


def test_cgroup_v1_memory_controller(tmp_path: Path) -> None:
    mount = tmp_path / "memory"
    group = mount / "docker" / "abc"
    group.mkdir(parents=True)
    (group / "memory.limit_in_bytes").write_text(f"{1024 * MB}\n")
    (group / "memory.usage_in_bytes").write_text(f"{1000 * MB}\n")
    proc_cgroup, mountinfo = _fake_proc(
        tmp_path,
        "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n",
        f"35 31 0:32 / {mount} rw,relatime - cgroup cgroup rw,memory\n",
    )
    limit = find_memory_limit(proc_cgroup, mountinfo)
    assert limit.cgroup_version == 1
    assert limit.available(0) == 24 * MB


def test_cgroup_v1_unlimited_is_not_a_limit(tmp_path: Path) -> None:
    mount = tmp_path / "memory"
    mount.mkdir()
    (mount / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    proc_cgroup, mountinfo = _fake_proc(
        tmp_path, "4:memory:/\n", f"35 31 0:32 / {mount} rw - cgroup cgroup rw,memory\n"
    )
    assert find_memory_limit(proc_cgroup, mountinfo).cgroup_version == 0


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="Linux /proc only")
def test_linux_reader_reads_this_process() -> None:
    sample = LinuxReader().read()
    assert sample.resident_bytes > 5 * MB
    assert (
        sample.footprint_bytes is not None
        and 0 < sample.footprint_bytes <= sample.resident_bytes * 2
    )
    assert sample.threads >= 1
    assert sample.cpu_seconds > 0
    assert sample.available_bytes is None or sample.available_bytes > 0


def test_rlimit_as_is_used_when_no_cgroup_limit(tmp_path: Path) -> None:
    proc_cgroup, mountinfo = _fake_proc(tmp_path, "", "")
    script = f"""
import resource
from pathlib import Path
from hawkwatch.agent.sysinfo import find_memory_limit
limit = 4 * 1024 ** 3
resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
found = find_memory_limit(Path({str(proc_cgroup)!r}), Path({str(mountinfo)!r}))
print(found.source, found.rlimit_bytes, found.available(1024 ** 3))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    source, rlimit, available = out.stdout.rsplit(maxsplit=2)
    assert source.startswith("RLIMIT_AS")
    assert int(rlimit) == 4 * 1024**3
    assert int(available) == 3 * 1024**3
