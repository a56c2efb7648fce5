"""A base for small value classes on the agent's start path: equality and ``repr`` from
``__slots__``, as the msgspec Structs they replace had, without what ``typing.NamedTuple``
costs at import (it compiles a constructor from source for every class)."""

from __future__ import annotations


class Value:
    """Subclasses list their fields in ``__slots__`` and set them in ``__init__``."""

    __slots__: tuple[str, ...] = ()

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"
