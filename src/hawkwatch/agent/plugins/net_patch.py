"""What every client family's instrumentation shares: its callbacks, and putting wrappers on
library functions so that they can be taken off again politely.

``restore`` puts an original back only where our wrapper is still the outermost: when another
tool wrapped the function after us, its wrapper keeps working (ours then only passes through,
as the monitor's ``finish`` ignores requests once it stopped).
"""

from __future__ import annotations

from collections.abc import Callable

from hawkwatch.agent.plugins.net_timeline import Timeline
from hawkwatch.agent.plugins.net_untraced import Tally, Untraced

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

Finish = Callable[[Timeline | Untraced], None]
OnError = Callable[[Exception], None]
Sampled = Callable[[object], bool]


def _always(origin: object) -> bool:
    return True


class Instrumentation:
    """Base of the client families' instrumentations: callbacks and the wrappers put on."""

    def __init__(
        self,
        finish: Finish,
        get_loop: Callable[[], object | None],
        on_error: OnError,
        sampled: Sampled = _always,
        *,
        skips: dict[object, int] | None = None,
        tally: Tally | None = None,
    ) -> None:
        self._finish = finish
        self._tally = Tally() if tally is None else tally
        """Where a family's hooks count untraced requests that ended well, when that is cheaper
        than an ``Untraced`` each (the monitor's: it takes them)."""
        self._sampled = sampled
        """Counts a request to an origin; whether to trace it (``net_sampling.Sampler``)."""
        self._skips: dict[object, int] = {} if skips is None else skips
        """``Sampler.skips`` of ``sampled``: its usual answer, untraced, without a call."""
        self._get_loop = get_loop
        self._on_error = on_error
        self._saved: list[tuple[Any, str, Any, Any]] = []
        self._defaults: list[tuple[type, str]] = []

    def replace(self, owner: Any, name: str, wrapper: Any) -> None:
        """Put ``wrapper`` in place of ``owner.name`` (it keeps the original's name and doc)."""
        original = getattr(owner, name)
        try:
            wrapper.__wrapped__ = original
        except (AttributeError, TypeError):
            pass
        for attribute in ("__name__", "__qualname__", "__doc__"):
            try:
                setattr(wrapper, attribute, getattr(original, attribute))
            except (AttributeError, TypeError):
                pass
        setattr(owner, name, wrapper)
        self._saved.append((owner, name, original, wrapper))

    def add_default(self, owner: type, name: str, value: None) -> None:
        """A class attribute of ours (``name`` not the library's): the default of a per-instance
        attribute the wrappers set, removed at ``uninstall``."""
        if name not in vars(owner):  # else left by an earlier run whose wrapper stayed
            setattr(owner, name, value)
            self._defaults.append((owner, name))

    def uninstall(self) -> None:
        """Put the originals back where our wrapper is still the outermost; take our class
        attributes off when every wrapper came off (an inert one left in another tool's chain
        still reads them). Instances keep what was set on them, unused."""
        every = True
        for owner, name, original, wrapper in reversed(self._saved):
            if owner.__dict__.get(name) is wrapper:
                setattr(owner, name, original)
            else:
                every = False
        self._saved.clear()
        if every:
            for owner, name in self._defaults:
                if name in vars(owner):
                    delattr(owner, name)
        self._defaults.clear()
