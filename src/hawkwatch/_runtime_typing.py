"""Run-time stand-ins for ``typing.Protocol``, ``Generic`` and ``NamedTuple``.

Every process ``hawkwatch run`` starts imports the agent before the program's first line, and
``typing`` alone costs it ~12 M instructions (~3 ms; on 3.11 it also brings ``re``). The agent's
modules need typing only for type checkers, so they import it under ``if TYPE_CHECKING:`` and,
for the three names a class statement evaluates at run time, take these instead::

    TYPE_CHECKING = False
    if TYPE_CHECKING:
        from typing import NamedTuple, Protocol
    else:
        from hawkwatch._runtime_typing import NamedTuple, Protocol

Type checkers see typing's own; at run time the classes behave the same for what the agent does
with them (``tests/agent/test_startup.py`` checks that a supervised program never loads typing).
"""

import sys
from collections import namedtuple
from collections.abc import Callable

__all__ = ["Generic", "NamedTuple", "Protocol"]


class Protocol:
    """A structural type is only for type checkers: at run time a plain, empty base."""

    __slots__ = ()


class Generic:
    """``Generic[T]`` as a base: ``Table[T]`` and ``Table[int]`` give ``Table`` itself, so a
    class deriving from ``Table[int]`` works as typing's would."""

    __slots__ = ()

    def __class_getitem__(cls, _item: object) -> type:
        return cls


_namedtuple: Callable[..., type] = namedtuple  # called with names known only at run time


class _NamedTupleMeta(type):
    """``class P(NamedTuple): x: int; y: str = ""`` builds ``collections.namedtuple("P", ...)``
    with the class body's defaults, methods, properties and docstring, as typing does.

    The fields are read off ``__annotations__`` by name only: under ``from __future__ import
    annotations`` they are strings, which typing would compile (its first ``compile()`` builds
    the ``ast`` types, ~10 M instructions on 3.11).
    """

    def __new__(cls, name: str, bases: tuple[type, ...], namespace: dict[str, object]) -> type:
        if not bases:  # NamedTuple itself
            return super().__new__(cls, name, bases, namespace)
        annotations = namespace.get("__annotations__", {})
        assert isinstance(annotations, dict)
        fields = list(annotations)
        defaults = [namespace[f] for f in fields if f in namespace]
        if any(f not in namespace for f in fields[len(fields) - len(defaults) :]):
            raise TypeError(f"{name}: a field without a default follows one with a default")
        made = _namedtuple(name, fields, defaults=defaults, module=str(namespace.get("__module__")))
        for key, value in namespace.items():
            if key in fields or key in ("__annotations__", "__module__", "__qualname__"):
                continue
            setattr(made, key, value)
        made.__qualname__ = str(namespace.get("__qualname__", name))
        made.__annotations__ = annotations
        return made


class NamedTuple(metaclass=_NamedTupleMeta):
    """Base of a class-syntax named tuple (see ``_NamedTupleMeta``)."""


if sys.version_info >= (3, 14):  # lazy annotations (PEP 649): no ``__annotations__`` to read
    from typing import Generic, NamedTuple, Protocol
