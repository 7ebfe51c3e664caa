"""Canon inside pytest: the plugin's fixtures and hooks, and pytest-native baselines.

Layer: interface. Imports every layer below it (errors, core, judge, project, check, report).
The ``pytest11`` entry point names this package; it re-exports the plugin's hooks and fixtures
so that pytest registers them from here, and loads nothing heavy until a fixture is used.
"""

from __future__ import annotations

from canon.pytest_plugin.plugin import (
    canon_baseline,
    canon_config,
    canon_constitution,
    canon_metric,
    canon_trace,
    pytest_addoption,
    pytest_configure,
    pytest_sessionfinish,
    pytest_terminal_summary,
    pytest_testnodedown,
)

__all__ = [
    "canon_baseline",
    "canon_config",
    "canon_constitution",
    "canon_metric",
    "canon_trace",
    "pytest_addoption",
    "pytest_configure",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
    "pytest_testnodedown",
]
