"""Score a run, confirm it by re-asking, and check it against a baseline: the check as a library.

Layer: check (orchestration; no printing). Imports errors, core, gates, judge and project;
never monitor, report or an interface. ``score_run``, ``check_run``, ``compare_run`` and
``baseline_from_run`` are importable from here; the other modules are internal.
"""

from __future__ import annotations

from canon.check.pipeline import (
    CheckOutcome,
    baseline_from_run,
    check_run,
    compare_run,
    noise_of,
    score_run,
)

__all__ = ["CheckOutcome", "baseline_from_run", "check_run", "compare_run", "noise_of", "score_run"]
