"""``store.files``' path text: what ``str(Path(...))`` gives, without ``pathlib``."""

from __future__ import annotations

from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from hawkwatch.store.files import path_join, path_name, path_text

PATHS = st.lists(
    st.sampled_from(["/", "//", "a", "b.c", ".", "..", "~", " ", "é"]), max_size=8
).map("".join)


@given(PATHS)
@example("")
@example("//x//y/")
@example("///x")
@example("./a/./b/.")
def test_path_text_is_the_text_of_the_path(text: str) -> None:
    assert path_text(text) == str(Path(text))
    assert path_text(Path(text)) == str(Path(text))
    assert path_name(path_text(text)) == Path(text).name


@given(PATHS, st.sampled_from(["records.mtlog", "session.json", "x/y", ".", ""]))
def test_path_join_is_the_text_of_the_joined_path(folder: str, name: str) -> None:
    assert path_join(path_text(folder), name) == str(Path(folder) / name)
