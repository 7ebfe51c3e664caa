"""Shared fixtures for Canon's own tests."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from canon import Constitution, constitution_from_file

# Nothing in the suite may reach the internet; litellm reads this before fetching prices.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


def _load_by_path(name: str, filename: str) -> Any:
    """Import a helper module next to this file (the tests are not a package)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(filename))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


# Fixtures found here are visible to every test directory; the browser ones live in their
# own module and are re-exported under their fixture names.
_browser = _load_by_path("canon_tests_chromium", "chromium_plugin.py")
chromium = _browser.chromium
page = _browser.page


@pytest.fixture
def constitution() -> Constitution:
    """The bundled example's constitution (four principles)."""
    return constitution_from_file(EXAMPLES / "constitution.yaml")


@pytest.fixture
def write(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Write a text file under tmp_path and return its path."""

    def _write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    return _write
