"""The base of the config's option groups: frozen, keyword-only, documented option by option.

What a frozen dataclass gave, without its cost at import: ``@dataclass`` compiles several
methods per class, and the agent's start-up paid ~7 ms for the config's seventeen classes, in
every process. These classes share this base's methods instead; ``option`` and ``section``
declare the fields (``dataclass_transform`` tells type checkers so).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hawkwatch run's start)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, ClassVar, Self, TypeVar, dataclass_transform

    T = TypeVar("T")
else:

    def dataclass_transform(**_ignored: object) -> object:  # for type checkers only
        return lambda cls: cls


class Option:
    """One option's default (or factory, for a section), documentation and minimum."""

    __slots__ = ("default", "doc", "factory", "minimum", "name")

    def __init__(
        self,
        default: Any,
        doc: str,
        minimum: float | None = None,
        factory: Callable[[], Any] | None = None,
    ) -> None:
        self.name = ""
        self.default = default
        self.doc = doc
        self.minimum = minimum
        self.factory = factory


def option(default: Any, doc: str, minimum: float | None = None) -> Any:
    return Option(default, doc, minimum)


def section(default_factory: type[T]) -> T:
    return Option(None, "", factory=default_factory)  # type: ignore[return-value]


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(option, section))
class Options:
    """A frozen group of options: ``Option`` class attributes become keyword-only fields."""

    _options: ClassVar[tuple[Option, ...]] = ()

    def __init_subclass__(cls) -> None:
        found = []
        for name, value in vars(cls).items():
            if isinstance(value, Option):
                value.name = name
                found.append(value)
        cls._options = tuple(found)

    def __init__(self, **values: Any) -> None:
        set_ = object.__setattr__
        for option in self._options:
            if option.name in values:
                set_(self, option.name, values.pop(option.name))
            elif option.factory is not None:
                set_(self, option.name, option.factory())
            else:
                set_(self, option.name, option.default)
        if values:
            name = next(iter(values))
            raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {name!r}")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, option.name) for option in self._options)

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` (``dataclasses.replace`` for these classes)."""
        return type(self)(**{o.name: getattr(self, o.name) for o in self._options} | changes)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: {type(self).__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: {type(self).__name__} is frozen")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        inner = ", ".join(f"{o.name}={getattr(self, o.name)!r}" for o in self._options)
        return f"{type(self).__name__}({inner})"


def fields(cls: type[Options]) -> Iterator[Option]:
    return iter(cls._options)
