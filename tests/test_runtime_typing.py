"""The run-time stand-ins for typing's classes behave as typing's do where the agent uses them."""

from __future__ import annotations

import pickle
import typing

import pytest

from hawkwatch import _runtime_typing


def _point(base: type) -> type:
    class Point(base):  # type: ignore[misc,valid-type]
        """A point."""

        x: int
        y: int = 0
        label: str = ""

        @property
        def total(self) -> int:
            return int(self.x) + int(self.y)

        def shifted(self, by: int) -> Point:
            return self._replace(x=self.x + by)

    return Point


@pytest.mark.parametrize("base", [typing.NamedTuple, _runtime_typing.NamedTuple])
def test_a_class_syntax_named_tuple_has_its_fields_defaults_methods_and_doc(base: type) -> None:
    point = _point(base)
    p = point(3)
    assert p == (3, 0, "") and isinstance(p, tuple)
    assert repr(point(1, 2, "a")) == "Point(x=1, y=2, label='a')"
    assert point._fields == ("x", "y", "label")
    assert point._field_defaults == {"y": 0, "label": ""}
    assert p.total == 3 and p.shifted(2) == (5, 0, "")
    assert point.__doc__ == "A point."
    assert point.__name__ == "Point" and point.__module__ == __name__
    assert list(point.__annotations__) == ["x", "y", "label"]


def test_a_stand_in_named_tuple_pickles_by_its_module_and_name() -> None:
    from hawkwatch.model.stack import PyFrame

    frame = PyFrame("f", "a.py", 3)
    assert pickle.loads(pickle.dumps(frame)) == frame == ("f", "a.py", 3, "")
    assert frame.text == "f (a.py:3)"


@pytest.mark.parametrize("base", [typing.NamedTuple, _runtime_typing.NamedTuple])
def test_a_field_without_default_after_one_with_a_default_is_refused(base: type) -> None:
    with pytest.raises(TypeError):

        class Bad(base):  # type: ignore[misc,valid-type]
            a: int = 0
            b: int


def test_a_stand_in_generic_subscripts_to_the_class_itself() -> None:
    from hawkwatch.model.stack import StackTable, UniquingTable

    assert UniquingTable[int] is UniquingTable
    assert issubclass(StackTable, UniquingTable)
    table: UniquingTable[str] = UniquingTable()
    assert table.add(["a", "b"]) == table.add(["a", "b"])
