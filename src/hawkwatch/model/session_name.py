"""A session folder's name: its process's start time (stdlib ``time`` only, so that
``hawkwatch run``'s supervisor can name earlier sessions without loading the store)."""

from __future__ import annotations

import time


def format_session_name(unix_time: float) -> str:
    """``YYYY-MM-DD_HH-MM-SS+mmm`` in local time."""
    seconds = int(unix_time)
    millis = round((unix_time - seconds) * 1000)
    if millis == 1000:
        seconds, millis = seconds + 1, 0
    return time.strftime("%Y-%m-%d_%H-%M-%S", time.localtime(seconds)) + f"+{millis:03d}"
