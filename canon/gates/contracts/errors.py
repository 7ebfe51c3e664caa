"""Errors of the contract gate."""

from __future__ import annotations

from canon.errors import GateError


class ContractError(GateError):
    """A behavioral contract is malformed or cannot be used as written."""
