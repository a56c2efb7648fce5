"""The test binaries and their dSYMs, built once per session (see ``debug_files.py``)."""

from __future__ import annotations

import pytest

from tests.symbols.debug_files import Built, build


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return build(tmp_path_factory.mktemp("debug-files"))
