"""``hawkwatch check-config``: the effective options and their sources; strict about mistakes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    return subprocess.run(
        [sys.executable, "-m", "hawkwatch", "check-config", *args],
        cwd=cwd,
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_every_option_with_its_value_and_source(tmp_path: Path) -> None:
    (tmp_path / "hawkwatch.toml").write_text("[gc]\nthreshold_ms = 4\n")
    result = _run(["--json", "-c", "resources.interval_s=2"], tmp_path, HAWKWATCH_APP_NAME="shop")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert (document["format"], document["format_version"]) == ("hawkwatch-options", 1)
    rows = {row["option"]: row for row in document["options"]}
    assert rows["resources.interval_s"]["value"] == 2.0
    assert rows["resources.interval_s"]["source"] == "option resources.interval_s"
    assert rows["app.name"] == {
        "option": "app.name",
        "value": "shop",
        "source": "environment HAWKWATCH_APP_NAME",
        "env": "HAWKWATCH_APP_NAME",
        "doc": "application name written to session.json",
    }
    assert rows["gc.threshold_ms"]["value"] == 4.0
    assert rows["gc.threshold_ms"]["source"].endswith("hawkwatch.toml (gc.threshold_ms)")
    assert rows["sessions.keep"]["source"] == "default"


def test_a_mistyped_variable_is_one_line_and_exit_code_2(tmp_path: Path) -> None:
    result = _run([], tmp_path, HAWKWATCH_GC_TRESHOLD_MS="3")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "HAWKWATCH_GC_TRESHOLD_MS" in lines[0] and "HAWKWATCH_GC_THRESHOLD_MS" in lines[0]
    assert result.stdout == ""


def test_a_config_file_that_is_not_utf8_is_one_line_naming_the_file(tmp_path: Path) -> None:
    config = tmp_path / "hawkwatch.toml"
    config.write_bytes('[app]\nname = "café"\n'.encode("latin-1"))  # é is 0xe9 in Latin-1
    result = _run([], tmp_path)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert str(config) in line
    assert "not UTF-8" in line and "0xe9" in line
    assert "internal error" not in line and "Traceback" not in result.stderr


def test_a_config_file_that_is_a_folder_is_reported_not_skipped(tmp_path: Path) -> None:
    (tmp_path / "hawkwatch.toml").mkdir()
    result = _run([], tmp_path)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert str(tmp_path / "hawkwatch.toml") in line and "not a file" in line
