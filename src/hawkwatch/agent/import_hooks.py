"""Run a callback right after a named module is imported: a ``sys.meta_path`` finder.

Patching a library when it is first imported (asyncio's event loop, tkinter's ``mainloop``) must
happen before the app can use it: a periodic look at ``sys.modules`` would come too late for an
app that imports tkinter and enters ``mainloop`` at once. The finder asks the finders after it
for the spec and wraps the loader's ``exec_module``; any other name costs one dict lookup per
module actually loaded. Re-entrance is guarded per thread: several such finders (ours, or
another tool's) each ask the others in turn, and would otherwise ask each other back forever,
wrapping the loader once per round and running callbacks twice.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any


class AfterImport:
    """Calls ``callbacks[name]`` right after module ``name`` has executed; ``on_error`` gets
    what a callback raised (the import itself never fails because of us)."""

    def __init__(
        self,
        callbacks: Mapping[str, Callable[[], None]],
        on_error: Callable[[Exception], None],
    ) -> None:
        self.callbacks = dict(callbacks)
        self.on_error = on_error
        self._busy = threading.local()

    def install(self) -> None:
        sys.meta_path.insert(0, self)

    def uninstall(self) -> None:
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        callback = self.callbacks.get(name)
        if callback is None or getattr(self._busy, "on", False):
            return None
        spec = self._spec_from_the_others(name, path, target)
        loader = getattr(spec, "loader", None)
        original = getattr(loader, "exec_module", None)
        if original is None:
            return spec
        on_error = self.on_error

        def exec_module(module: Any) -> None:
            original(module)
            try:
                callback()
            except Exception as exc:
                on_error(exc)

        loader.exec_module = exec_module  # type: ignore[union-attr]
        return spec

    def _spec_from_the_others(self, name: str, path: Any, target: Any) -> Any:
        self._busy.on = True
        try:
            for finder in sys.meta_path:
                find = getattr(finder, "find_spec", None)
                if finder is self or find is None:
                    continue
                spec = find(name, path, target)
                if spec is not None:
                    return spec
            return None
        finally:
            self._busy.on = False
