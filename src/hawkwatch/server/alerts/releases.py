"""Ordering release names: PEP 440 when both parse, else a semver-like reading.

A regression is an occurrence in a release *later* than the one an issue was resolved in, so
"1.10" must follow "1.9", "1.0rc1" precede "1.0", and "2.0.0-beta.2" precede "2.0.0". Names that
are not PEP 440 (``v1.2.3-beta+build``, ``1.2 (45)``) compare by their numbers, then a
pre-release tag sorts before the plain release.
"""

from __future__ import annotations

import re

from packaging.version import InvalidVersion, Version

_NUMBERS = re.compile(r"\d+")
_TAGS = re.compile(r"[0-9]+|[A-Za-z]+")


def compare_releases(a: str, b: str) -> int:
    """-1, 0 or 1 as ``a`` is older than, the same as, or newer than ``b``."""
    try:
        left, right = Version(a), Version(b)
    except InvalidVersion:
        key_a, key_b = _fallback_key(a), _fallback_key(b)
        return (key_a > key_b) - (key_a < key_b)
    return (left > right) - (left < right)


def is_later(release: str | None, than: str | None) -> bool:
    """True when ``release`` is known and newer than ``than`` (no resolved release: any is)."""
    if release is None:
        return False
    return than is None or compare_releases(release, than) > 0


def _fallback_key(name: str) -> tuple[tuple[int, ...], int, tuple[tuple[int, int, str], ...]]:
    text = name.strip().lstrip("vV").split("+", 1)[0]
    core, dash, pre = text.partition("-")
    numbers = tuple(int(n) for n in _NUMBERS.findall(core))
    if not dash:  # the release itself sorts after its pre-releases
        return numbers, 1, ()
    tags = tuple(
        (0, int(tag), "") if tag.isdigit() else (1, 0, tag.lower()) for tag in _TAGS.findall(pre)
    )
    return numbers, 0, tags
