"""``hawkwatch run``'s command line read without ``argparse``, for the common forms.

Every supervised start pays for what runs before its program is spawned, and ``argparse``
(with ``re``, ``gettext`` and ``locale``) and building the parser are most of it. The forms
people write (``run [-v] [--debug] run [OPTIONS] -- python app.py``, ``-m module``, the
flags, ``-c NAME=VALUE``) are read here into the same namespace ``argparse`` would give; for
anything else (``--help``, an abbreviation, an unknown or deprecated option, a value that
looks like an option) this returns None and ``argparse`` reads the command line as always, with
its errors and help. ``tests/cli/test_run_args.py`` checks the two agree.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

_GLOBAL_FLAGS = {"--debug": "debug"}
_RUN_FLAGS = {"--profile": "profile", "--children": "children"}
_RUN_VALUES = {"--app-name": "app_name", "--app-version": "app_version"}
_IO = {"--io": True, "--no-io": False}


class RunArgs:
    """The attributes ``argparse``'s namespace would have (``types.SimpleNamespace`` without
    importing ``types`` before the spawn)."""

    verbose: int
    debug: bool
    command: list[str]
    module: list[str] | None
    app_name: str | None
    app_version: str | None
    profile: bool
    memory: str | None
    children: bool
    io: bool | None
    option: list[str]
    _module: str

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)


def parse_run(argv: Sequence[str]) -> RunArgs | None:
    """The namespace ``build_parser(argv).parse_args(argv)`` gives for a ``run`` command line
    of a common form; None for any other (``argparse`` then reads it)."""
    args = RunArgs(
        verbose=0,
        debug=False,
        command=[],
        module=None,
        app_name=None,
        app_version=None,
        profile=False,
        memory=None,
        children=False,
        io=None,
        option=[],
        _module="hawkwatch.cli.run",
    )
    index = 0
    while index < len(argv) and argv[index] != "run":  # the options before the command
        token = argv[index]
        if token in ("-v", "--verbose"):
            args.verbose += 1
        elif token in _GLOBAL_FLAGS:
            setattr(args, _GLOBAL_FLAGS[token], True)
        else:
            return None
        index += 1
    if index == len(argv):
        return None
    rest = list(argv[index + 1 :])
    while rest:
        token = rest[0]
        if token == "--" or not token.startswith("-") or token == "-":
            args.command = rest  # ``--`` included, as argparse's REMAINDER keeps it
            return args
        name, equals, value = token.partition("=")
        if token in _RUN_FLAGS:
            setattr(args, _RUN_FLAGS[token], True)
        elif token in _IO:
            args.io = _IO[token]
        elif token == "-m":
            if len(rest) < 2 or rest[1].startswith("-") or "--" in rest[1:]:
                return None
            args.module = rest[1:]
            return args
        elif name == "--memory":
            if equals:
                if not value or value.startswith("-"):
                    return None
                args.memory = value
            elif len(rest) > 1 and not rest[1].startswith("-"):
                args.memory = rest.pop(1)  # ``--memory python app.py``: run sorts it out
            elif len(rest) == 1 or rest[1] == "--":
                args.memory = "tracemalloc"
            else:
                return None
        elif name in _RUN_VALUES or name in ("-c", "--option"):
            if equals and name != "-c":
                given = value
            elif not equals and len(rest) > 1 and not rest[1].startswith("-"):
                given = rest.pop(1)
            else:
                return None
            if name in _RUN_VALUES:
                setattr(args, _RUN_VALUES[name], given)
            else:
                args.option.append(given)
        else:
            return None
        rest.pop(0)
    return args
