"""What every constraint kind shares: the ``Constraint`` protocol, severities, and the
``ConstraintKind`` entry a kind module declares for the registry (``kinds/__init__.py``).

A kind module holds one constraint: its frozen value (with ``name`` and ``check``), its YAML
schema (required and optional keys), how a validated YAML mapping builds it, how it is
written back (``dump``), a Python builder, and one line describing it for the docs.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from canon.gates.contracts.errors import ContractError
from canon.gates.contracts.facts import Facts, Finding
from canon.gates.contracts.otel.classify import step_name_for

Severity = Literal["error", "warning"]
SEVERITIES: tuple[str, ...] = ("error", "warning")


class Constraint(Protocol):
    """One rule a contract checks against an execution."""

    @property
    def category(self) -> str:
        """``source``, ``step``, ``output`` or ``escalation``."""
        ...

    @property
    def method(self) -> str:
        """``deterministic`` or ``heuristic``."""
        ...

    @property
    def severity(self) -> Severity:
        """``error`` makes the verdict fail, ``warning`` makes it warn."""
        ...

    @property
    def name(self) -> str:
        """The constraint's printed name."""
        ...

    def check(self, facts: Facts) -> Finding | None:
        """Return why the execution violates the constraint, or None."""
        ...


def check_severity(severity: object, where: str = "severity") -> Severity:
    """Return ``severity`` when it is one the verdict understands; raise otherwise."""
    if severity == "error" or severity == "warning":
        return severity
    raise ContractError(f"{where}: unknown severity {severity!r}; expected 'error' or 'warning'")


def names(values: object, what: str) -> tuple[str, ...]:
    """A non-empty list of non-empty names as a tuple; ``ContractError`` otherwise."""
    if isinstance(values, str) or not isinstance(values, list | tuple) or not values:
        raise ContractError(f"{what}: expected a non-empty list of names, got {values!r}")
    if not all(isinstance(value, str) and value for value in values):
        raise ContractError(f"{what}: every entry must be a non-empty string, got {values!r}")
    return tuple(values)


def step_names(raw: Any) -> Any:
    """Step names as contracts for the reference write them (raw span names) -> step names."""
    if isinstance(raw, str):
        return step_name_for(raw)
    if isinstance(raw, list) and all(isinstance(item, str) for item in raw):
        return [step_name_for(item) for item in raw]
    return raw  # the constructor reports what is wrong with it


def listed(values: Any) -> tuple[str, ...]:
    """Names given to a Python builder: a bare string is one name, not its characters."""
    if isinstance(values, str):
        return (values,)
    return tuple(values)


@dataclass(frozen=True, slots=True)
class ConstraintKind:
    """One constraint kind, as the registry lists it.

    ``type`` is the YAML ``type:``; ``required`` and ``optional`` are its own keys (besides
    ``type``, ``severity`` and ``when``); keys in ``conditions`` hold a condition (the keys
    of ``when:``) and are parsed, with their location, before ``build`` sees them.
    ``build`` makes the constraint from the checked mapping and severity; ``dump`` gives
    a constraint's own keys back for YAML (None: it has no YAML form that round-trips).
    ``summary`` is its line in the docs' table of kinds.
    """

    type: str
    constraint: builtins.type[Any]
    required: tuple[str, ...]
    optional: tuple[str, ...]
    build: Callable[[Mapping[str, Any], Severity], Constraint]
    dump: Callable[[Any], dict[str, Any]] | None
    summary: str
    conditions: tuple[str, ...] = ()
