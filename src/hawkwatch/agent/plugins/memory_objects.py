"""Living objects: live instances counted by type, and a referrer path for growing types.

MTHawkeye's LivingObjectSniffer asks "which objects outlived their owner, held by whom"; in
Python terms: which types keep gaining instances, and what chain of references from a root (a
module global, a class attribute, a thread's frame) keeps one of them alive.

Both walks are bounded, because they run in the app's process holding the GIL: the census stops
at its time budget (and is then not used for growth), and the path search walks back one
level at a time with one ``gc.get_referrers`` scan per level, stopping at ``max_objects``
visited or its time budget. References to instances are dropped before returning.
"""

from __future__ import annotations

import _weakref
import gc
import sys
import threading
import time
import types
from collections.abc import Callable, Mapping

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

MAX_DEPTH = 12
"""Levels of referrers searched before giving up."""


def type_name(kind: type) -> str:
    module = getattr(kind, "__module__", "") or ""
    qualname = getattr(kind, "__qualname__", kind.__name__)
    return qualname if module == "builtins" else f"{module}.{qualname}"


#: How long other threads wait for the GIL before asking for it while the census holds it.
HOLD_INTERVAL_S = 2.0


class gil_held:  # lower case: used as the context-manager function it was
    """Keep other Python threads from running while the body holds references to every object.

    ``gc.get_objects``/``gc.get_referrers`` return objects still being built, such as a tuple
    that ``tuple(generator)`` is filling: if its thread resumes while we hold a reference, its
    ``_PyTuple_Resize`` fails with ``SystemError: bad argument to internal function`` in the app
    (seen in ``benchmarks/workloads/cpu_mix.py`` with tracing on). With a long switch interval
    set, this thread sleeps past the old one, so every thread's next wait for the GIL is a long
    one and none asks for it back during the body, which must drop all such references before
    it ends. The app's interval is restored. (A class, not ``contextlib.contextmanager``: the
    agent's start does not import ``contextlib``.)
    """

    __slots__ = ("_interval_s", "_previous")

    def __init__(self, interval_s: float = HOLD_INTERVAL_S) -> None:
        self._interval_s = interval_s
        self._previous = 0.0

    def __enter__(self) -> None:
        previous = self._previous = sys.getswitchinterval()
        sys.setswitchinterval(self._interval_s)
        try:
            # Longer than the old interval: a thread already waiting for the GIL with it times
            # out meanwhile (else it would ask for the GIL during the body); its next wait is
            # long.
            time.sleep(min(previous, 0.05) + 0.001)
        except BaseException:
            sys.setswitchinterval(previous)
            raise

    def __exit__(self, *exc_info: object) -> None:
        sys.setswitchinterval(self._previous)


MAX_BASELINE_IDS = 200_000
"""Ids remembered per type for telling new instances from old ones (about 8 MB at most)."""


class Census:
    """What one ``census`` found."""

    __slots__ = ("baselines", "chosen", "complete", "counts", "planted")

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.chosen: dict[str, Any] = {}
        """Per wanted type with a baseline, an instance to search a referrer path from."""
        self.baselines: dict[str, frozenset[int]] = {}
        """Ids seen now, per wanted type without a baseline yet."""
        self.planted: dict[str, list[Any]] = {}
        """Weak references to a spread of this census's new instances, per wanted type whose
        instances take them: the next census's ``planted`` argument."""
        self.complete = False


def census(
    budget_s: float,
    want: Mapping[str, frozenset[int] | None] | None = None,
    clock: Callable[[], float] = time.thread_time,
    planted: Mapping[str, list[Any]] | None = None,
) -> Census:
    """Count live gc-tracked objects by type name within ``budget_s`` of this thread's CPU.

    For each type in ``want`` with an id baseline, an instance created since and still alive,
    to name what holds it (MTHawkeye's "alive after its owner"): one that has outlived a whole
    census interval — the first of the previous census's ``planted`` weak references still
    alive. A bounded cache's entries are alive and new too, but it lets them go within an
    interval; a leak keeps them. (Ids cannot tell: a bounded cache's new entries reuse its old
    entries' addresses.) For a type without weak references, the oldest new instance (the
    oldest generation is walked first). For types without a baseline yet, the ids seen now.
    """
    want = want or {}
    planted = planted or {}
    found = Census()
    deadline = clock() + budget_s
    # Instances grouped in per-type lists, not counted in ints: under tracemalloc every int
    # a counter allocates is traced, a list append almost never allocates.
    buckets: dict[type, list[Any]] = {}
    # The three lists are taken with the collector off: a collection between two of them would
    # move young objects into a generation already listed, and they would be missed.
    enabled = gc.isenabled()
    gc.disable()
    try:
        generations = [gc.get_objects(generation) for generation in (2, 1, 0)]
    finally:
        if enabled:
            gc.enable()
    for objects in generations:
        try:
            for index, obj in enumerate(objects):
                bucket = buckets.get(type(obj))
                if bucket is None:
                    bucket = buckets[type(obj)] = []
                bucket.append(obj)
                if not index & 0xFFF and clock() > deadline:
                    buckets.clear()
                    return found
        finally:
            objects.clear()
    counts = found.counts
    try:
        for kind, instances in buckets.items():
            name = type_name(kind)
            counts[name] = counts.get(name, 0) + len(instances)
            if name not in want:
                continue
            base = want[name]
            if base is None:
                found.baselines[name] = frozenset(id(o) for o in instances[:MAX_BASELINE_IDS])
                continue
            if kind is tuple:
                continue  # never kept past the census: a tuple may still be being built
            _choose(found, name, base, instances, planted.get(name))
    finally:
        buckets.clear()
    found.complete = True
    return found


PLANTED = 16
"""Weak references kept per growing type from one census to the next."""


def _choose(
    found: Census, name: str, base: frozenset[int], instances: list[Any], planted: list[Any] | None
) -> None:
    """``found.chosen[name]`` from ``planted`` (a survivor) or ``instances``, and the next
    census's weak references to an even spread of this one's new instances."""
    new = [obj for obj in instances if id(obj) not in base]  # oldest generation first
    try:
        refs = [_weakref.ref(obj) for obj in new[:: max(1, len(new) // PLANTED)][:PLANTED]]
    except TypeError:  # no weak references to this type: the oldest new instance
        if new:
            found.chosen[name] = new[0]
        return
    finally:
        new.clear()
    found.planted[name] = refs
    for ref in planted or ():
        survivor = ref()
        if survivor is not None:
            found.chosen[name] = survivor
            return


def referrer_path(
    target: Any, *, max_objects: int, budget_s: float, clock: Callable[[], float] = time.thread_time
) -> tuple[list[str], str]:
    """Hops from a root to ``target`` (root first), or ``([], why)`` when none was found."""
    deadline = clock() + budget_s
    roots = _roots()
    own: set[int] = set()
    own_frame = sys._getframe()
    own.add(id(own_frame))
    parent: dict[int, tuple[Any, Any]] = {id(target): (None, None)}  # id → (object, child)
    level = [target]
    own.update((id(parent), id(level)))
    visited = 1
    try:
        for _depth in range(MAX_DEPTH):
            if clock() > deadline:
                return [], "time budget reached"
            found = gc.get_referrers(*level)
            own.add(id(found))
            following: list[Any] = []
            own.add(id(following))
            for referrer in found:
                if id(referrer) in own or id(referrer) in parent:
                    continue
                if isinstance(referrer, types.FrameType) and _is_own_frame(referrer, own_frame):
                    continue
                child = _child_of(referrer, level)
                if child is None:
                    continue
                parent[id(referrer)] = (referrer, child)
                root = _root_label(referrer, roots)
                if root is not None:
                    return _hops(root, referrer, child, parent), ""
                following.append(referrer)
                visited += 1
                if visited >= max_objects:
                    return [], f"{max_objects} objects visited without reaching a root"
            del found
            if not following:
                return [], "no root holds it (only unreachable or untracked referrers)"
            level = following
            own.add(id(level))
        return [], f"no root within {MAX_DEPTH} references"
    finally:
        parent.clear()
        level = []
        del own_frame


def _roots() -> dict[int, str]:
    """Root containers by id: module namespaces."""
    return {
        id(module.__dict__): f"module {name}"
        for name, module in list(sys.modules.items())
        if isinstance(module, types.ModuleType)
    }


def _is_own_frame(frame: types.FrameType, own: types.FrameType) -> bool:
    probe: types.FrameType | None = own
    while probe is not None:
        if probe is frame:
            return True
        probe = probe.f_back
    return frame.f_code.co_filename == __file__


def _child_of(referrer: Any, level: list[Any]) -> Any:
    referents = {id(obj) for obj in gc.get_referents(referrer)}
    if isinstance(referrer, types.FrameType):
        referents.update(id(v) for v in referrer.f_locals.values())
    for obj in level:
        if id(obj) in referents:
            return obj
    return None


def _root_label(referrer: Any, roots: dict[int, str]) -> str | None:
    if id(referrer) in roots:
        return roots[id(referrer)]
    if isinstance(referrer, type):
        return f"class {type_name(referrer)}"
    if isinstance(referrer, types.FrameType):
        for thread_id, frame in sys._current_frames().items():
            probe: types.FrameType | None = frame
            while probe is not None:
                if probe is referrer:
                    thread = threading._active.get(thread_id)  # type: ignore[attr-defined]
                    name = thread.name if thread is not None else str(thread_id)
                    code = referrer.f_code
                    where = f"{code.co_filename}:{referrer.f_lineno}"
                    return f"thread {name} frame {code.co_qualname} ({where})"
                probe = probe.f_back
    return None


def _hops(root: str, holder: Any, child: Any, parent: dict[int, tuple[Any, Any]]) -> list[str]:
    hops = [root]
    while child is not None:
        hops.append(f"{_edge(holder, child)} → {type_name(type(child))}")
        holder, child = child, parent[id(child)][1]
    return hops


def _edge(holder: Any, child: Any) -> str:
    """How ``holder`` refers to ``child``: ``.name``, ``[key]``, ``[i]``, ``closure``, …"""
    if isinstance(holder, dict):
        for key, value in holder.items():
            if value is child:
                if isinstance(key, str) and key.isidentifier():
                    return f".{key}"
                return f"[{key!r:.40}]"
        for key in holder:
            if key is child:
                return "key"
    if isinstance(holder, list | tuple):
        for index, value in enumerate(holder):
            if value is child:
                return f"[{index}]"
    if isinstance(holder, set | frozenset):
        return "item"
    if isinstance(holder, types.FunctionType):
        return f"{holder.__qualname__} closure" if isinstance(child, tuple) else holder.__qualname__
    if isinstance(holder, types.CellType):
        return "cell"
    if isinstance(holder, types.FrameType):
        for key, value in holder.f_locals.items():
            if value is child:
                return key
    if isinstance(holder, type):
        return "__dict__"
    for key, value in getattr(holder, "__dict__", {}).items():
        if value is child:
            return f".{key}"
    return "ref"
