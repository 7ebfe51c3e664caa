"""Importing the test helpers that stay beside the tests they serve (benchmarks load them too)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

TESTS = Path(__file__).resolve().parents[1]


def load_helper(relative: str) -> ModuleType:
    """Import ``tests/<relative>`` once, as ``canon_tests_<stem>``, and return the module."""
    path = TESTS / relative
    name = f"canon_tests_{path.stem}"
    # one module object for every importer, so a server's state class is the same class
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
