"""The exceptions hawkwatch raises, all under one root.

    HawkwatchError                 anything hawkwatch raises on purpose; carries a CLI exit code
    ├── ConfigError                an unknown option or a value that does not parse
    ├── FormatError                input that holds nothing usable (.source, .offset, .reason)
    │   └── UnsupportedVersion     a file written by a newer, incompatible writer
    ├── StoreError                 the session store cannot be opened or written
    ├── NotASessionError           a path that is neither a hawkwatch nor an MTHawkeye session
    └── UsageError                 an argument that cannot be used: a missing folder, an unknown
                                   collection, a count out of range (exit code 2, as argparse's)

Agent entry points (``hawkwatch.start`` and friends) never let these reach user code; library
functions and the CLI raise them with a message that names the thing, the place and the way out.
"""

from __future__ import annotations


class HawkwatchError(Exception):
    """Root of every error hawkwatch raises on purpose."""

    exit_code: int = 1


class ConfigError(HawkwatchError):
    """An option is unknown or its value does not parse."""

    exit_code = 2


class FormatError(HawkwatchError):
    """Input that holds nothing usable: wrong magic, not the expected format at all."""

    def __init__(self, source: str, reason: str, offset: int | None = None) -> None:
        where = f"{source}: offset {offset}" if offset is not None else source
        super().__init__(f"{where}: {reason}")
        self.source = source
        self.offset = offset
        self.reason = reason


class UnsupportedVersion(FormatError):
    """A file written by a newer writer whose changes this reader would misread."""


class StoreError(HawkwatchError):
    """The session store cannot be opened or written (disk full, permissions, closed store)."""


class NotASessionError(HawkwatchError):
    """A path given as a session is not a hawkwatch or MTHawkeye session folder."""

    exit_code = 2


class UsageError(HawkwatchError):
    """An argument that cannot be used: a missing folder, an unknown name, a count out of range."""

    exit_code = 2
