"""Launch timing: ``app-launch`` from process start to ``hawkwatch.mark_ready()``.

The record is written when the agent starts, again when the main module starts (under
``hawkwatch run``) and at ``mark_ready()``; readers take the last one. Milestones not captured
are 0, as in MTHawkeye's ``app-launch``.
"""

from __future__ import annotations

from hawkwatch.agent.monitor import AgentContext

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import ClassVar


class LaunchMonitor:
    name: ClassVar[str] = "launch"

    def __init__(self) -> None:
        self._ctx: AgentContext | None = None

    def start(self, ctx: AgentContext) -> None:
        self._ctx = ctx
        ctx.on("main-started", self.write)
        ctx.on("ready", self.write)
        self.write()

    def write(self) -> None:
        if self._ctx is not None:
            self._ctx.write_nowait(self._ctx.launch.as_record())

    def stop(self) -> None:
        self._ctx = None

    def after_fork_child(self) -> None:
        self._ctx = None
