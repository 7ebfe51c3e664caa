"""Shared fixtures for Canon's own tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from canon import Constitution, constitution_from_file

from support.helper_modules import load_helper

# Nothing in the suite may reach the internet; litellm reads this before fetching prices.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


# Fixtures found here are visible to every test directory; the browser ones live in their
# own module and are re-exported under their fixture names.
_browser = load_helper("chromium_plugin.py")
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
