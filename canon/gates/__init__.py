"""Deterministic gates that run before any judge call: the JSON policy checker and trace contracts.

Layer: gates (pure: they take parsed values). Imports canon.errors and canon.core; yaml to
parse contract text.
"""

from canon.core.gate_outcome import GateOutcome

__all__ = ["GateOutcome"]
