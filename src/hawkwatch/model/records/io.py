"""File-I/O misuse found by the I/O canary (``io-issue``), in IOCanary's terms.

One record per issue key per session: the key is IOCanary's MD5 of the path and the top four
frames (function and file, no line), prefixed by the type; the agent writes it again as the
count grows, and the last record of a key wins (``model.io.issue_key``, shared with the agent,
which keys its issues before it builds a record).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import msgspec

from hawkwatch.model import collections as c
from hawkwatch.model.io import KEY_FRAMES, issue_key
from hawkwatch.model.records._codec import Count, JsonRecord, NonNegative

IssueType = Literal["loop-thread-io", "small-buffer", "repeated-read", "unclosed"]


class IoFrame(msgspec.Struct, frozen=True):
    """One frame of the stack that opened the file."""

    function: str
    file: str
    line: int


class IoIssue(JsonRecord, frozen=True):
    """A file used in a way that hurts (``docs/collections.md`` lists the rules).

    ``ops``, ``bytes`` (transferred), ``buffer_size`` (largest single request) and ``cost_ms``
    (total time in the OS) describe the first file seen with this key — for ``loop-thread-io``
    only its ops on the loop thread; ``frames`` is the opening stack, innermost first;
    ``count`` is how many times the rule fired for this key (a ``repeated-read`` fires once per
    ``repeat_count`` identical reads) among the files the canary watched.

    The canary samples hot, clean opening sites (``io.sample_every``): ``unwatched`` is how many
    files opened at this issue's site went unwatched before the issue was first found there
    (one in ``sampled_one_in`` was watched meanwhile); from then on the site's files are all
    watched. ``unwatched`` 0 (and ``sampled_one_in`` 1) means every file opened there was
    watched, so ``count`` misses none; otherwise ``count`` may. Absent in records written
    before sampling existed (read as 0 and 1: those watched everything).
    """

    collection: ClassVar[str] = c.IO_ISSUE

    type: IssueType
    path: str
    thread: str
    ops: Count
    bytes: Count
    buffer_size: Count
    cost_ms: NonNegative
    frames: tuple[IoFrame, ...]
    count: Count
    unwatched: Count = 0
    sampled_one_in: Annotated[int, msgspec.Meta(ge=1)] = 1

    def record_key(self) -> str:
        return issue_key(self.type, self.path, self.frames)


__all__ = ["KEY_FRAMES", "IoFrame", "IoIssue", "IssueType", "issue_key"]
