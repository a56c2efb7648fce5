"""File-I/O canary (Matrix's IOCanary for Python): I/O on the loop thread, small buffers,
repeated reads and unclosed files, recorded as ``io-issue``.

The hooks (``io_hooks``) see every read and write that reaches the OS through a file opened by
``open``/``io.open``/``pathlib``/``os.open``; the collector (``io_issues``) applies the rules
(``analysis.io_rules``) as files close. This monitor wires them to the config and the session:
every half second, on the scheduler thread, it refreshes the loop threads and the agent's own
threads, writes the counts that grew, and raises a failure the hooks caught (the runtime then
disables the monitor, which puts the real functions back). Stopping, and forking, restore the
real ``open`` at once; files already open keep working and stop counting.
"""

from __future__ import annotations

import os

from hawkwatch._lazylog import lazy_logger
from hawkwatch.agent.monitor import AgentContext
from hawkwatch.agent.plugins import io_hooks, io_raw, io_threads
from hawkwatch.agent.plugins.io_issues import SYSTEM_PREFIXES, IssueCollector
from hawkwatch.config import IoConfig
from hawkwatch.model.io import IoRules

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import re
    from typing import ClassVar

log = lazy_logger(__name__)
TICK_S = 0.5


def rules_from(config: IoConfig) -> IoRules:
    """The rule thresholds in the collector's units (ns)."""
    return IoRules(
        loop_thread=config.loop_thread,
        loop_op_ns=round(config.loop_op_ms * 1e6),
        loop_continual_ns=round(config.loop_continual_ms * 1e6),
        continual_gap_ns=round(config.continual_gap_ms * 1e6),
        small_buffer=config.small_buffer,
        small_buffer_ops=config.small_buffer_ops,
        small_buffer_bytes=config.small_buffer_bytes,
        small_buffer_min_run_ns=round(config.small_buffer_min_run_ms * 1e6),
        repeated_read=config.repeated_read,
        repeat_count=config.repeat_count,
        repeat_window_ns=round(config.repeat_window_ms * 1e6),
        unclosed=config.unclosed,
    )


def _pattern(source: str) -> re.Pattern[str]:
    """``io.redact`` compiled (``re`` imported only when a pattern is set)."""
    import re

    try:
        return re.compile(source)
    except re.error as exc:
        raise ValueError(f"io.redact is not a regular expression: {exc}") from None


class IoMonitor:
    name: ClassVar[str] = "io"

    def __init__(self) -> None:
        self._collector: IssueCollector | None = None

    def start(self, ctx: AgentContext) -> None:
        config = ctx.config.io
        redact = _pattern(config.redact) if config.redact else None
        rules = rules_from(config)
        sessions = os.path.dirname(ctx.session.folder) + os.sep
        collector = IssueCollector(
            rules,
            ctx.write_nowait,
            max_frames=config.max_frames,
            ignore_prefixes=(*SYSTEM_PREFIXES, sessions),
            home=os.path.expanduser("~"),
            redact=redact,
            warmup=config.site_warmup,
            sample_every=config.sample_every,
        )
        collector.refresh_threads()
        io_threads.refresh()
        self._collector = collector
        io_raw.configure(
            gap_ns=rules.continual_gap_ns,
            loop_op_ns=rules.loop_op_ns,
            loop_run_ns=rules.loop_continual_ns,
            track_runs=rules.small_buffer_min_run_ns > 0,
        )
        skipped = io_hooks.install(collector)
        if skipped:
            log.info("hawkwatch: io: left alone (wrapped by another tool): %s", ", ".join(skipped))
        ctx.every(TICK_S, self._tick, self)

    def _tick(self) -> None:
        collector = self._collector
        if collector is None:
            return
        collector.failure.raise_if_failed()
        collector.refresh_threads()
        io_threads.refresh()
        collector.flush()

    def stop(self) -> None:
        collector, self._collector = self._collector, None
        if collector is None:
            return
        collector.active = False
        io_hooks.remove(collector)
        collector.flush()

    def after_fork_child(self) -> None:
        collector, self._collector = self._collector, None
        if collector is not None:
            collector.active = False  # its lock may be held by a thread the child lacks
            io_hooks.remove(collector)
        io_threads.forget_after_fork()
