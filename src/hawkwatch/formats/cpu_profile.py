"""hawkwatch's ``cpu-profile`` windows: records, or side files ``cpu-profile/<key>.json``.

A record's value is ``Profile.as_json()`` (``model/profile.py``); a window of 15 KB or more is a
side file of that shape, and its record then carries the summary fields plus ``"file"``: the
path relative to the session folder. Unreadable windows are skipped with their reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from hawkwatch.errors import StoreError
from hawkwatch.model import Parsed, Record, Skipped
from hawkwatch.model import collections as c
from hawkwatch.model.profile import Profile
from hawkwatch.store.files import read_side_file


def read_profiles(folder: str | Path, records: Iterable[Record]) -> Parsed[list[Profile]]:
    """The session's profiler windows, oldest first."""
    base = Path(folder).resolve()
    profiles: list[Profile] = []
    skipped: list[Skipped] = []
    for number, record in enumerate(records, start=1):
        if record.collection != c.CPU_PROFILE:
            continue
        try:
            value = json.loads(record.value)
            if isinstance(value, dict) and isinstance(value.get("file"), str):
                path = (base / value["file"]).resolve()
                if base not in path.parents:
                    raise ValueError("side file outside the session folder")
                data = read_side_file(path)
                if not data:
                    raise StoreError(f"{path}: missing or empty")
                value = json.loads(data)
            profiles.append(Profile.from_json(value))
        except StoreError as exc:
            skipped.append(Skipped(number, f"cpu-profile {record.key}: {exc}"))
        except RuntimeError:  # Path.resolve() on a symlink loop (Python 3.11, 3.12)
            skipped.append(Skipped(number, f"cpu-profile {record.key}: side file is a link loop"))
        except RecursionError:
            skipped.append(Skipped(number, f"cpu-profile {record.key}: nested too deeply"))
        except ValueError as exc:
            reason = "not JSON" if isinstance(exc, json.JSONDecodeError) else str(exc)
            skipped.append(Skipped(number, f"cpu-profile {record.key}: {reason}"))
    profiles.sort(key=lambda profile: profile.start_time)
    return Parsed(profiles, skipped)
