"""The error a trace file raises when it cannot be read as a trace."""

from __future__ import annotations

from canon.errors import InputError


class TraceError(InputError):
    """A trace is not JSON, not a trace format Canon reads, or holds no spans."""
