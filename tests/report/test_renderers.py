"""The renderer registry: names to modules, one contract."""

from __future__ import annotations

import io

import pytest

from hawkwatch.report import RENDERERS, get_renderer
from tests.report.test_console import small_report


def test_every_registered_renderer_renders_into_a_stream():
    for name in RENDERERS:
        renderer = get_renderer(name)
        out = io.StringIO()

        renderer.render(small_report(), out)

        assert "2023-11-14_22-13-20+000" in out.getvalue(), name
        assert renderer.output_file_extension


def test_an_unknown_name_lists_the_choices():
    with pytest.raises(
        ValueError, match=r"unknown report format 'html'; choose one of: console, json"
    ):
        get_renderer("html")
