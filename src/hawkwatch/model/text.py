"""Quoting input in messages: a damaged file must not turn one error line into megabytes."""

from __future__ import annotations

from typing import Final

EXCERPT_CHARS: Final = 80


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """``repr(value)`` (``str`` for strings), cut to ``limit`` characters with the length said."""
    try:
        text = value if isinstance(value, str) else repr(value)
    except ValueError:  # an int too long to turn into text
        return f"<{type(value).__name__} too large to show>"
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"
