"""Frames in terminal reports keep their line number visible: paths are shortened sensibly."""

from __future__ import annotations

import pytest

from hawkwatch.report.paths import short_frame, short_path


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/srv/app/shop/views.py", "shop/views.py"),  # inside the current directory
        ("/venv/lib/python3.12/site-packages/requests/api.py", "requests/api.py"),
        ("/usr/lib/python3.11/json/decoder.py", "json/decoder.py"),  # stdlib
        ("/opt/other/tool/deep/mod.py", "deep/mod.py"),  # elsewhere: the last two parts
        ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap>"),
        ("mod.py", "mod.py"),
    ],
)
def test_short_path(path: str, expected: str) -> None:
    assert short_path(path, cwd="/srv/app") == expected


def test_short_frame_keeps_function_and_line() -> None:
    text = "Handler.get (/srv/app/shop/views.py:42)"

    assert short_frame(text, cwd="/srv/app/") == "Handler.get (shop/views.py:42)"
    assert short_frame("render (/srv/app/x.py)", cwd="/srv/app") == "render (x.py)"
    assert short_frame("0x1045490f0", cwd="/srv/app") == "0x1045490f0"
