"""One typed configuration for the agent, from keyword arguments, environment and file.

Precedence, highest first: keyword arguments to ``hawkwatch.start()`` (or ``hawkwatch run -o``),
environment variables, ``hawkwatch.toml``, ``[tool.hawkwatch]`` in ``pyproject.toml``, defaults.
The file is looked for in the current directory and its parents; the first folder holding a
``hawkwatch.toml`` or a ``pyproject.toml`` with a ``[tool.hawkwatch]`` table wins.

One naming rule for every option: option ``section.name`` = environment variable
``HAWKWATCH_SECTION_NAME`` = key ``name`` in table ``[section]`` of the file = keyword argument
``section_name``. Options without a section (``home``, ``enabled``) sit at the top level.
Reference: ``docs/configuration.md``.
"""

from __future__ import annotations

import os

from hawkwatch.config_sources import ENV_PREFIX, FILE_NAME, config_files
from hawkwatch.errors import ConfigError
from hawkwatch.options import Option, Options, fields
from hawkwatch.options import option as _option
from hawkwatch.options import section as _section

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hawkwatch run's start)
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from pathlib import Path
    from typing import Any, Final




class AppConfig(Options):
    """Who is being monitored. Set these so sessions of different apps tell apart."""

    name: str | None = _option(None, "application name written to session.json")
    version: str | None = _option(None, "application version written to session.json")


class SessionsConfig(Options):
    """Retention of session folders; raise ``keep`` on hosts that restart many processes."""

    keep: int = _option(10, "newest sessions kept when a new one starts", 1)
    max_age_days: float = _option(7.0, "sessions older than this are removed", 0)


class ResourcesConfig(Options):
    """Memory, CPU and thread sampling. Lengthen the interval to cut its (small) cost."""

    enabled: bool = _option(True, "sample mem, r-mem, avl-mem, cpu, threads-count")
    interval_s: float = _option(0.5, "seconds between samples", 0.05)


class GcConfig(Options):
    """Garbage-collection pauses; lower the threshold to see shorter pauses."""

    enabled: bool = _option(True, "record collections that pause the program")
    threshold_ms: float = _option(10.0, "shortest pause recorded, in milliseconds", 0)


class LaunchConfig(Options):
    """Launch timing: process start to ``hawkwatch.mark_ready()``."""

    enabled: bool = _option(True, "record app-launch: process start to mark_ready()")


class ImportsConfig(Options):
    """Import timing, like ``python -X importtime``, recorded under ``hawkwatch run``."""

    enabled: bool = _option(True, "record slow imports in import-time")
    threshold_ms: float = _option(1.0, "shortest cumulative import time recorded, in ms", 0)


class StallConfig(Options):
    """Stalls (jank/ANR) of event loops: asyncio, Qt, Tk and loops calling ``heartbeat()``.

    Each kind of loop has the threshold its users feel: 100 ms for asyncio loops (asyncio's own
    ``slow_callback_duration``: every request in flight waits that long), 400 ms for GUI loops
    and ``heartbeat()`` loops (MTHawkeye's ANR threshold). Lower a threshold to catch shorter
    stalls (Apple calls 250 ms a hang); raise ``interval_s`` to ping less often (the duration
    error grows with it). Turn ``backstop`` off if the application uses
    ``faulthandler.dump_traceback_later`` itself.
    """

    enabled: bool = _option(True, "watch event loops and record stalls in anr")
    threshold_s: float = _option(
        0.4, "shortest stall recorded for Qt, Tk and heartbeat() loops, in seconds", 0.05
    )
    asyncio_threshold_s: float = _option(
        0.1, "shortest stall recorded for asyncio loops (uvloop too), in seconds", 0.05
    )
    interval_s: float = _option(
        0.1, "seconds between pings of a loop (at most its threshold)", 0.01
    )
    sample_interval_s: float = _option(0.05, "seconds between stack samples while stalled", 0.005)
    ring_size: int = _option(20, "newest stack samples kept per stall, besides the first", 1)
    max_frames: int = _option(64, "innermost frames kept per sample", 1)
    asyncio: bool = _option(True, "find running asyncio loops by themselves")
    qt: bool = _option(True, "watch the Qt main loop when PySide6/PyQt is in use")
    tk: bool = _option(True, "watch the Tk main loop when tkinter is in use")
    backstop: bool = _option(
        True, "arm faulthandler.dump_traceback_later to see stalls that hold the GIL"
    )


class CpuConfig(Options):
    """High-load trace (MTHawkeye's CPU Trace defaults). Lower the threshold or the duration to
    catch shorter or lighter bursts; set ``per_core`` on many-core hosts where one busy core is
    normal."""

    enabled: bool = _option(True, "record cpu-highload episodes with sampled call trees")
    highload_threshold: float = _option(
        0.8, "process CPU that starts an episode, 1.0 = one core busy", 0
    )
    per_core: bool = _option(False, "divide process CPU by the core count before comparing")
    check_interval_s: float = _option(1.0, "seconds between CPU checks while not high", 0.01)
    check_interval_busy_s: float = _option(
        0.3, "seconds between checks (and samples) while high", 0.01
    )
    thread_share: float = _option(
        0.15, "sample threads using more than this share of the process CPU", 0
    )
    highload_min_duration_s: float = _option(60.0, "shortest episode recorded, in seconds", 0)
    highload_exit_ratio: float = _option(
        0.75, "an episode ends at once below this fraction of highload_threshold", 0
    )
    highload_exit_checks: int = _option(
        3, "or after this many checks in a row below highload_threshold", 1
    )
    max_frames: int = _option(50, "innermost frames kept per sampled stack", 1)


class ProfilerConfig(Options):
    """Continuous sampling profiler (off by default; ``hawkwatch run --profile`` turns it on).
    Raise the budget for more samples, or fix ``rate_hz`` to compare with other profilers.
    Under ``hawkwatch run`` with the ``profile`` extra installed, py-spy samples the program from
    outside (no bias toward where threads release the GIL); ``engine`` chooses."""

    enabled: bool = _option(False, "sample every thread's stack continuously into cpu-profile")
    budget: float = _option(
        0.003,
        "CPU fraction of one core the samplers may use (py-spy's pauses included); what no "
        "sampler can time (cold caches after a pause, the GIL's hand-offs) comes on top: "
        "on four benchmarks 0.003 cost 0.3-0.8 % in all (at most 0.4-0.8 %), 0.005 0.7-1.1 %",
        0.0001,
    )
    rate_hz: float = _option(0.0, "fixed sampling rate; 0 = adapt to the budget", 0)
    max_rate_hz: float = _option(100.0, "highest adaptive sampling rate", 0.1)
    min_rate_hz: float = _option(1.0, "lowest adaptive sampling rate", 0.01)
    window_s: float = _option(10.0, "seconds of samples aggregated into one profile", 0.1)
    max_depth: int = _option(128, "innermost frames kept per stack", 1)
    engine: str = _option(
        "auto",
        "auto: py-spy from outside under hawkwatch run when installed, else in-process; "
        "py-spy; in-process",
    )
    pyspy_nonblocking: bool = _option(
        False, "let py-spy read stacks without pausing the program (cheaper, less exact)"
    )


class NetworkConfig(Options):
    """HTTP requests through http.client/urllib/urllib3/requests, httpx and aiohttp: phases,
    sizes, errors (``network-transaction``). URLs are recorded without query values, userinfo
    or fragments; name parameters whose values are safe and useful in ``keep_query_params``."""

    enabled: bool = _option(
        True, "time every HTTP request (network-transaction, network-aggregate)"
    )
    keep_query_params: str = _option(
        "", "comma-separated query parameter names whose values are kept (others: [redacted])"
    )
    sample_warmup: int = _option(
        64,
        "per host (scheme://host:port), the first requests traced in full: a script or test "
        "makes fewer and keeps every detail; a service is past it in seconds",
        0,
    )
    sample_every: int = _option(
        16,
        "after the warm-up, 1 request in this many per host traced in full (1: all); every "
        "request is still counted and timed in network-aggregate",
        1,
    )
    max_traced_per_s: float = _option(
        10.0,
        "after the warm-ups, at most this many requests a second traced in full, all hosts "
        "together (0: no cap): bounds tracing's cost and records in a busy service",
        0,
    )


class IoConfig(Options):
    """File-I/O canary (Matrix IOCanary's rules); on by default (``hawkwatch run --no-io`` or
    ``enabled=false`` turns it off): it costs a few microseconds per file watched, about half
    that per file left unwatched, and nothing measurable to a program that does no file I/O.
    Each opening site's first ``site_warmup`` files are watched; then a site with no issue has
    one file in ``sample_every`` watched (an issue there makes it fully watched): lower
    ``sample_every`` (1 = every file) to catch rare leaks at busy sites sooner, at a higher cost.
    Raise the loop thresholds if short reads on the loop are acceptable to you; raise
    ``repeat_window_ms`` to catch re-reads further apart; set ``redact`` when file paths carry
    names or ids that must not leave the host."""

    enabled: bool = _option(True, "watch file I/O and record misuse in io-issue")
    loop_thread: bool = _option(True, "report file I/O on an event loop's thread")
    loop_op_ms: float = _option(13.0, "one read or write on a loop thread longer than this", 0)
    loop_continual_ms: float = _option(
        500.0, "continual I/O on a loop thread longer than this, in ms", 0
    )
    continual_gap_ms: float = _option(8.0, "ops closer than this make one continual run", 0)
    small_buffer: bool = _option(True, "report files read or written in small pieces")
    small_buffer_ops: int = _option(20, "more ops on one file than this, ...", 0)
    small_buffer_bytes: int = _option(4096, "... asking for fewer bytes than this on average", 1)
    small_buffer_min_run_ms: float = _option(
        0.0, "and a continual run this long (IOCanary: 13); 0 = any", 0
    )
    repeated_read: bool = _option(True, "report a file read whole again and again")
    repeat_count: int = _option(5, "identical whole reads of one file in a row", 1)
    repeat_window_ms: float = _option(
        1000.0, "a read later than this after the last one starts a new row", 0
    )
    unclosed: bool = _option(True, "report files finalised without being closed")
    max_frames: int = _option(10, "innermost frames kept of the stack that opened a file", 1)
    redact: str | None = _option(
        None, "regular expression; what it matches in recorded paths becomes ***"
    )
    site_warmup: int = _option(
        64, "files watched at each opening site before a clean site may be sampled", 0
    )
    sample_every: int = _option(
        16, "past the warm-up, a site with no issue has 1 file in this many watched "
        "(1 = watch every file); a site with an issue stays fully watched", 1,
    )  # fmt: skip


class UploadConfig(Options):
    """Sending sessions to a collector (``hawkwatch server``): on when both ``url`` and ``key``
    are set. Unsent sessions wait in the session store and go with the next round or start."""

    url: str | None = _option(None, "collector URL, e.g. http://collector:8470 (off when unset)")
    key: str | None = _option(None, "the project's ingest key (hawkwatch server add-project)")
    interval_s: float = _option(60.0, "seconds between upload rounds", 1.0)
    retries: int = _option(2, "retries of one upload (with backoff) before the next round", 0)
    exit_wait_s: float = _option(
        5.0, "seconds hawkwatch run waits at most after the program ended to upload its "
        "session (what is not sent by then goes with the next start)", 0.0,
    )  # fmt: skip


class CrashConfig(Options):
    """Python crashes and exit classification: exception hooks (chained after the app's),
    faulthandler for fatal signals, memory levels. Turn ``fatal_signals`` off if the app enables
    faulthandler itself (hawkwatch leaves an already enabled faulthandler alone anyway)."""

    enabled: bool = _option(True, "record uncaught exceptions and fatal signals in crash")
    fatal_signals: bool = _option(True, "enable faulthandler into the session folder")
    breadcrumbs: int = _option(30, "events, spans and WARNING+ logs kept for a crash", 1)
    memory_levels: bool = _option(True, "record memory-level at 25/50/75/95 % of the limit")
    classify_earlier: bool = _option(True, "classify how earlier sessions' processes ended")


class MemoryConfig(Options):
    """Memory growth (always on, cheap), allocation tracing and living objects (on demand).

    ``trace``: ``auto`` starts tracemalloc when growth is found and stops it after
    ``trace_quiet_s`` without growth; ``always`` traces from the start (``hawkwatch run
    --memory``); ``never`` only reports growth. Tracing slows allocation-heavy code markedly
    (see docs/agent.md): lower ``trace_frames`` or raise ``snapshot_interval_s`` to pay less.
    ``backend=memray`` (``hawkwatch run --memory=memray``, the ``memory`` extra) records every
    allocation, native ones too, from start to exit; suspects are found when the process ends.
    """

    enabled: bool = _option(True, "watch the footprint for steady growth (memory-growth)")
    interval_s: float = _option(1.0, "seconds between footprint readings", 0.05)
    window_s: float = _option(60.0, "seconds of readings the growth slope is fitted over", 1)
    growth_min_mb: float = _option(20.0, "growth over the window that counts, in MB", 0)
    growth_min_percent: float = _option(10.0, "growth over the window that counts, in %", 0)
    trace: str = _option("auto", "allocation tracing: auto (on growth), always or never")
    backend: str = _option(
        "tracemalloc", "tracer: tracemalloc, or memray (native too; from start to exit)"
    )
    snapshot_interval_s: float = _option(5.0, "seconds between tracemalloc snapshots", 0.05)
    trace_quiet_s: float = _option(60.0, "auto tracing stops after this long without growth", 0)
    trace_frames: int = _option(16, "frames kept per allocation stack by tracemalloc", 1)
    min_snapshots: int = _option(4, "snapshots needed before leak suspects are named", 3)
    objects: bool = _option(True, "count live objects by type while tracing; referrer paths")
    referrer_budget_ms: float = _option(100.0, "CPU time one referrer-path search may take", 1)
    referrer_max_objects: int = _option(2000, "objects one referrer-path search may visit", 10)
    cycles: bool = _option(True, "count what the cyclic gc frees, by type (memory-cycles)")
    cycles_interval_s: float = _option(30.0, "seconds between memory-cycles records", 1)
    cycles_sample_s: float = _option(1.0, "at most one young collection typed per this long", 0.01)


class Config(Options):
    """Every agent option. Frozen, so monitors and the scheduler thread share it without locks."""

    enabled: bool = _option(True, "start the agent at all")
    home: str | None = _option(None, "root folder; sessions go to <home>/sessions")
    app: AppConfig = _section(AppConfig)
    sessions: SessionsConfig = _section(SessionsConfig)
    resources: ResourcesConfig = _section(ResourcesConfig)
    gc: GcConfig = _section(GcConfig)
    launch: LaunchConfig = _section(LaunchConfig)
    imports: ImportsConfig = _section(ImportsConfig)
    stall: StallConfig = _section(StallConfig)
    cpu: CpuConfig = _section(CpuConfig)
    profiler: ProfilerConfig = _section(ProfilerConfig)
    network: NetworkConfig = _section(NetworkConfig)
    upload: UploadConfig = _section(UploadConfig)
    io: IoConfig = _section(IoConfig)
    crash: CrashConfig = _section(CrashConfig)
    memory: MemoryConfig = _section(MemoryConfig)


class OptionSpec:
    """One option: its dotted name, type, default and documentation."""

    __slots__ = ("default", "doc", "field_name", "minimum", "name", "section", "type")

    def __init__(  # noqa: PLR0917 - one argument per attribute, as the dataclass had
        self,
        name: str,
        section: str | None,
        field_name: str,
        type: Any,
        default: Any,
        doc: str,
        minimum: float | None,
    ) -> None:
        self.name = name
        self.section = section
        self.field_name = field_name
        self.type = type
        self.default = default
        self.doc = doc
        self.minimum = minimum

    @property
    def env_var(self) -> str:
        return ENV_PREFIX + self.name.replace(".", "_").upper()

    @property
    def flat_name(self) -> str:
        return self.name.replace(".", "_")

    def __repr__(self) -> str:
        return f"OptionSpec({self.name!r}, default={self.default!r})"


_SPECS: list[tuple[OptionSpec, ...]] = []  # computed once: the annotations are evaluated then


def option_specs() -> list[OptionSpec]:
    """Every option, in documentation order."""
    if not _SPECS:
        specs: list[OptionSpec] = []
        hints = _type_hints(Config)
        for top in fields(Config):
            kind = hints[top.name]
            if isinstance(kind, type) and issubclass(kind, Options):
                section_hints = _type_hints(kind)
                specs.extend(
                    _spec(top.name, inner, section_hints[inner.name]) for inner in fields(kind)
                )
            else:
                specs.append(_spec(None, top, kind))
        _SPECS.append(tuple(specs))
    return list(_SPECS[0])


_PLAIN_TYPES: Final[dict[str, Any]] = {
    "bool": bool,
    "int": int,
    "float": float,
    "str": str,
    "str | None": str | None,
}


def _type_hints(cls: type[Options]) -> dict[str, Any]:
    """The options' types: the plain ones read from the annotations' text (evaluating a
    hundred annotations with ``typing.get_type_hints`` cost ~3 ms at every agent start)."""
    annotations: dict[str, Any] = cls.__annotations__
    found = {
        name: _PLAIN_TYPES.get(text) or _section_type(text) for name, text in annotations.items()
    }
    if all(kind is not None for kind in found.values()):
        return found
    import typing

    hints = typing.get_type_hints(cls, localns=vars(typing))
    return {name: kind or hints[name] for name, kind in found.items()}


def _section_type(name: str) -> type[Options] | None:
    found = globals().get(name)
    return found if isinstance(found, type) and issubclass(found, Options) else None


def _spec(section: str | None, option: Option, kind: Any) -> OptionSpec:
    name = f"{section}.{option.name}" if section else option.name
    return OptionSpec(name, section, option.name, kind, option.default, option.doc, option.minimum)


class LoadedConfig:
    """The effective config, where each non-default value came from, and the problems found."""

    __slots__ = ("config", "file", "problems", "sources")

    def __init__(
        self, config: Config, sources: dict[str, str], problems: list[str], file: Path | None
    ) -> None:
        self.config = config
        self.sources = sources
        self.problems = problems
        self.file = file


def parse_options(items: Iterable[str]) -> dict[str, str]:
    """``NAME=VALUE`` strings (``--option``) as a dict; ``ConfigError`` for a malformed one."""
    options: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"--option {item!r}: expected NAME=VALUE, e.g. gc.threshold_ms=5")
        options[name.strip()] = value
    return options


def load_config(
    overrides: Mapping[str, Any] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    strict: bool = False,
) -> LoadedConfig:
    """Build the config from keyword overrides, environment and file.

    With ``strict``, the first unknown option or bad value raises ``ConfigError`` naming it and
    the accepted forms; otherwise problems are collected and the default is used instead, so a
    typo never stops the host application.
    """
    specs = {spec.name: spec for spec in option_specs()}
    by_flat = {spec.flat_name: spec for spec in specs.values()}
    environ = os.environ if environ is None else environ
    problems: list[str] = []
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}

    def problem(message: str) -> None:
        if strict:
            raise ConfigError(message)
        problems.append(message)

    def put(spec: OptionSpec, raw: Any, source: str) -> None:
        try:
            values[spec.name] = _convert(spec, raw)
            sources[spec.name] = source
        except ValueError as exc:
            problem(f"{source}: {exc}")

    try:
        file_path, file_options = _find_file(os.getcwd() if cwd is None else os.fspath(cwd))
    except ConfigError as exc:
        problem(str(exc))
        file_path, file_options = None, {}
    for dotted, raw in file_options.items():
        spec = specs.get(dotted)
        if spec is None:
            problem(f"{file_path}: unknown option {dotted!r}; {_valid_names(specs)}")
        else:
            put(spec, raw, f"{file_path} ({dotted})")

    for variable, raw in environ.items():
        if not variable.startswith(ENV_PREFIX):
            continue
        spec = by_flat.get(variable[len(ENV_PREFIX) :].lower())
        if spec is None:
            problem(f"unknown environment variable {variable}; {_valid_env(specs)}")
        else:
            put(spec, raw, f"environment {variable}")

    for name, raw in (overrides or {}).items():
        spec = specs.get(name) or by_flat.get(name)
        if spec is None:
            problem(f"unknown option {name!r}; {_valid_names(specs)}")
        elif raw is not None:  # None means "not given" (start(app_name=None))
            put(spec, raw, f"option {spec.name}")

    return LoadedConfig(_build(values), sources, problems, file_path)


def _build(values: Mapping[str, Any]) -> Config:
    top: dict[str, Any] = {}
    for option in fields(Config):
        if option.factory is not None:  # a section
            prefix = f"{option.name}."
            inner = {
                name[len(prefix) :]: value
                for name, value in values.items()
                if name.startswith(prefix)
            }
            top[option.name] = option.factory(**inner)
        elif option.name in values:
            top[option.name] = values[option.name]
    return Config(**top)


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _convert(spec: OptionSpec, raw: Any) -> Any:
    kind = spec.type
    if kind is bool:
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise ValueError(
            f"{spec.name} = {raw!r:.80} is not a boolean (use true/false, 1/0, yes/no)"
        )
    if kind in (int, float):
        try:
            number = kind(raw) if not isinstance(raw, bool) else None
        except (TypeError, ValueError):
            number = None
        if number is None:
            expected = "an integer" if kind is int else "a number"
            raise ValueError(f"{spec.name} = {raw!r:.80} is not {expected}")
        if spec.minimum is not None and number < spec.minimum:
            raise ValueError(f"{spec.name} = {raw!r:.80} is below its minimum {spec.minimum:g}")
        return number
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise ValueError(f"{spec.name} = {raw!r:.80} is not a string")
    return raw


def _find_file(start: str) -> tuple[Path | None, dict[str, Any]]:
    """The first of ``config_files`` that holds options: a ``hawkwatch.toml``, or a
    ``pyproject.toml`` with a ``[tool.hawkwatch]`` table. ``pathlib`` (~2.5 ms with
    ``urllib.parse``) is imported only for a file found, so ``hawkwatch run`` spawns its
    program without it."""
    for path in config_files(start):
        if os.path.basename(path) == FILE_NAME:
            if not os.path.isfile(path):  # a folder (or a socket...): say so, do not skip it
                raise ConfigError(
                    f"{path}: not a file; hawkwatch reads its options from a file there"
                )
            return _path(path), _flatten(_read_toml(path))
        table = _read_toml(path).get("tool", {}).get("hawkwatch")
        if isinstance(table, dict):
            return _path(path), _flatten(table)
    return None, {}


def _path(text: str) -> Path:
    from pathlib import Path

    return Path(text)


def _read_toml(path: str) -> dict[str, Any]:
    import tomllib  # only when a file is there: 3,800 objects the GC would scan forever

    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except UnicodeDecodeError as exc:  # TOML is UTF-8; tomllib decodes before it parses
        byte = exc.object[exc.start]
        raise ConfigError(
            f"{path}: cannot read the configuration: not UTF-8 text (byte 0x{byte:02x} at "
            f"offset {exc.start}); save it as UTF-8"
        ) from exc
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the configuration: {exc}") from exc


def _flatten(table: Mapping[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            for inner, inner_value in value.items():
                flat[f"{key}.{inner}"] = inner_value
        else:
            flat[key] = value
    return flat


def _valid_names(specs: Mapping[str, OptionSpec]) -> str:
    return "valid options: " + ", ".join(specs)


def _valid_env(specs: Mapping[str, OptionSpec]) -> str:
    return "valid variables: " + ", ".join(spec.env_var for spec in specs.values())
