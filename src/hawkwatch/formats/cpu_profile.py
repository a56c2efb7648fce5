"""hawkwatch's ``cpu-profile`` windows: records, or side files ``cpu-profile/<key>.json``.

A record's value is a ``model.records.CpuProfile``; a window of 15 KB or more is a side file of
that shape, and its record then carries the summary fields plus ``"file"``: the path relative
to the session folder. Unreadable windows are skipped with their reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from hawkwatch.errors import StoreError
from hawkwatch.model import Parsed, Record, Skipped
from hawkwatch.model import collections as c
from hawkwatch.model.profile import Profile
from hawkwatch.model.records import CpuProfile, RecordError, decode_json
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
            window = CpuProfile.from_record(record)
            if window.file is not None:
                path = (base / window.file).resolve()
                if base not in path.parents:
                    raise RecordError("side file outside the session folder")
                data = read_side_file(path)
                if not data:
                    raise StoreError(f"{path}: missing or empty")
                window = CpuProfile.from_value(decode_json(data), record.key)
            profiles.append(window.to_profile())
        except StoreError as exc:
            skipped.append(Skipped(number, f"cpu-profile {record.key}: {exc}"))
        except RuntimeError:  # Path.resolve() on a symlink loop (Python 3.11, 3.12)
            skipped.append(Skipped(number, f"cpu-profile {record.key}: side file is a link loop"))
        except OSError as exc:
            skipped.append(Skipped(number, f"cpu-profile {record.key}: {exc.strerror}"))
        except RecordError as exc:
            skipped.append(Skipped(number, f"cpu-profile {record.key}: {exc}"))
    profiles.sort(key=lambda profile: profile.start_time)
    return Parsed(profiles, skipped)
