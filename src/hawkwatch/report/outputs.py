"""One registry of outputs per result type: console text, JSON, and the result's exports.

``OUTPUTS`` maps a result type's name (``SessionReport``, ``CallTree``, ``CrashGroups`` …) to its
formats; each format names a function ``render(result, file)`` as ``"module:function"``, imported
only when chosen. ``write_output`` is what every command (and a Python caller) uses: it picks the
renderer, opens ``path`` (text or binary as the format needs) or writes to stdout, and refuses to
send a binary format (or a document: the HTML report) to a terminal. Every JSON output is one
document that starts with ``format`` and ``format_version``; its JSON Schema is
``schemas/<format>.schema.json`` beside this module.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import IO, Any, Final, TextIO, cast

from hawkwatch.errors import HawkwatchError, UsageError
from hawkwatch.report._json import write_json


@dataclass(frozen=True, slots=True)
class Output:
    """One way to write a result: the function that renders it, and what kind of file it is."""

    target: str
    extension: str
    is_binary: bool = False
    #: what opens the written file, for the status line
    opens_with: str | None = None
    #: a document to open in an application (an HTML file): refused on a terminal like binary
    #: output, written when piped
    file_only: bool = False
    #: ``target`` returns a JSON document (``format`` first) instead of writing one; indented so
    json_indent: int | None = None

    def renderer(self) -> Callable[[Any, IO[Any]], None]:
        module_name, _, function = self.target.partition(":")
        found = getattr(importlib.import_module(module_name), function)
        if self.json_indent is None:
            return cast(Callable[[Any, IO[Any]], None], found)
        to_json = cast(Callable[[Any], Mapping[str, Any]], found)
        indent = self.json_indent
        return lambda result, file: write_json(to_json(result), cast(TextIO, file), indent)


def _json(module: str, function: str = "to_json", indent: int = 2) -> Output:
    return Output(f"hawkwatch.report.{module}:{function}", "json", json_indent=indent)


def _text(module: str, function: str = "render_text") -> Output:
    return Output(f"hawkwatch.report.{module}:{function}", "txt")


#: Result type name → format name → output. The first format is the command's default.
OUTPUTS: Final[Mapping[str, Mapping[str, Output]]] = MappingProxyType(
    {
        "SessionReport": {
            "console": Output("hawkwatch.report.console:render", "txt"),
            "json": _json("json_report", "to_json_dict"),
            "html": Output(
                "hawkwatch.report.html_report:render",
                "html",
                opens_with="a web browser (one self-contained file)",
                file_only=True,
            ),
        },
        "CallTree": {
            "collapsed": Output(
                "hawkwatch.formats.collapsed:render",
                "txt",
                opens_with="flamegraph.pl, inferno-flamegraph or https://www.speedscope.app",
            ),
            "speedscope": Output(
                "hawkwatch.formats.speedscope:render",
                "speedscope.json",
                opens_with="https://www.speedscope.app (or 'npx speedscope FILE')",
            ),
            "pprof": Output(
                "hawkwatch.formats.pprof:render",
                "pb.gz",
                is_binary=True,
                opens_with="'go tool pprof -http=: FILE'",
            ),
            "svg": Output(
                "hawkwatch.formats.flamegraph_svg:render", "svg", opens_with="a web browser"
            ),
            "json": Output(
                "hawkwatch.report.profile_output:tree_to_json",
                "json",
                opens_with="any JSON reader",
                json_indent=2,
            ),
        },
        "ProfileListing": {
            "console": _text("profile_output"),
            "json": _json("profile_output", "listing_to_json"),
        },
        "CrashGroups": {"console": _text("crash_groups"), "json": _json("crash_groups")},
        "SymbolicatedCrash": {
            "console": _text("crash_text", "render_symbolicated"),
            "json": _json("crash_json", "symbolicated_to_json", indent=1),
        },
        "JetsamResult": {"console": _text("jetsam_output"), "json": _json("jetsam_output")},
        "SessionList": {"console": _text("session_list"), "json": _json("session_list")},
        "RecordListing": {"console": _text("record_listing"), "json": _json("record_listing")},
        "OptionTable": {"console": _text("option_table"), "json": _json("option_table")},
        "DebugFileList": {"console": _text("debug_files"), "json": _json("debug_files")},
        "FileDump": {"console": _text("file_dump"), "json": _json("file_dump")},
        "AllocationResult": {
            "console": _text("allocation_output"),
            "json": _json("allocation_output"),
            "collapsed": Output("hawkwatch.api.allocations:render_collapsed", "txt"),
            "speedscope": Output(
                "hawkwatch.api.allocations:render_speedscope", "speedscope.json",
                opens_with="https://www.speedscope.app (or 'npx speedscope FILE')",
            ),
            "svg": Output("hawkwatch.api.allocations:render_svg", "svg",
                          opens_with="a web browser"),
        },
        "MemoryReport": {
            "console": Output("hawkwatch.report.memory:render_console", "txt"),
            "json": _json("memory", "to_json_document"),
            "collapsed": Output("hawkwatch.api.memory:render_collapsed", "txt"),
            "speedscope": Output(
                "hawkwatch.api.memory:render_speedscope", "speedscope.json",
                opens_with="https://www.speedscope.app (or 'npx speedscope FILE')",
            ),
        },
        "NetworkReport": {
            "console": Output("hawkwatch.report.network_console:render", "txt"),
            "json": _json("network_json", "to_json_dict"),
        },
    }
)


def formats_for(result_type: str) -> tuple[str, ...]:
    """The format names a result type can be written in, its default first."""
    return tuple(OUTPUTS[result_type])


def output_for(result: object, format: str) -> Output:
    """The output called ``format`` for ``result``'s type; ``UsageError`` naming the choices."""
    formats = OUTPUTS.get(type(result).__name__)
    if formats is None:
        raise TypeError(f"no outputs for {type(result).__name__}")
    try:
        return formats[format]
    except KeyError:
        choices = ", ".join(formats)
        raise UsageError(f"unknown format {format!r}; choose one of: {choices}") from None


def render(result: object, format: str, file: IO[Any]) -> None:
    """Write ``result`` in ``format`` to an open stream (binary for binary formats)."""
    output_for(result, format).renderer()(result, file)


def write_output(
    result: object,
    format: str,
    path: str | Path | None = None,
    *,
    stdout: TextIO | None = None,
) -> str:
    """Write ``result`` to ``path`` (``-`` or None: stdout); returns where it went.

    A binary format or a document (``file_only``) is not written to a terminal: ``UsageError``
    asks for a file.
    """
    output = output_for(result, format)
    write = output.renderer()
    if path is None or str(path) == "-":
        stream = sys.stdout if stdout is None else stdout
        if (output.is_binary or output.file_only) and stream.isatty():
            kind = "binary" if output.is_binary else "a document"
            raise UsageError(
                f"{format} output is {kind} and stdout is a terminal; "
                f"write it to a file with -o FILE.{output.extension} (or pipe it)"
            )
        if output.is_binary:
            write(result, stream.buffer)
            stream.buffer.flush()
        else:
            write(result, stream)
            stream.flush()
        return "stdout"
    target = Path(path).expanduser()
    try:
        with target.open("wb" if output.is_binary else "w", **_text_mode(output)) as file:
            write(result, file)
    except OSError as exc:
        raise HawkwatchError(f"{target}: cannot write: {exc.strerror or exc}") from exc
    return str(target)


def _text_mode(output: Output) -> dict[str, Any]:
    return {} if output.is_binary else {"encoding": "utf-8"}


__all__ = ["OUTPUTS", "Output", "formats_for", "output_for", "render", "write_output"]
