"""Deterministic gates that run before any judge call."""

from canon.gates.outcome import GateOutcome

__all__ = ["GateOutcome"]
