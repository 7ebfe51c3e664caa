"""Contracts and verdicts: the values the gate takes and returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from canon.gates.contracts.constraints import Constraint
from canon.gates.contracts.errors import ContractError
from canon.gates.contracts.execution import DataSource

VerdictStatus = Literal["pass", "fail", "warn"]


@dataclass(frozen=True, slots=True)
class Contract:
    """A named, versioned list of constraints plus the tool → data-source map they rely on."""

    name: str
    version: str
    constraints: tuple[Constraint, ...]
    source_map: Mapping[str, DataSource] = field(default_factory=dict)
    description: str = ""
    # every verdict lists them; constraints are frozen, so their names are worked out once
    constraint_names: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.constraints:
            raise ContractError(
                f"contract {self.name!r} has no constraints; a contract that checks nothing "
                f"would pass every trace, so add at least one"
            )
        object.__setattr__(self, "constraints", tuple(self.constraints))
        names = tuple(constraint.name for constraint in self.constraints)
        object.__setattr__(self, "constraint_names", names)


@dataclass(frozen=True, slots=True)
class Violation:
    """One violated constraint, located by its index in the contract."""

    index: int
    name: str
    severity: str
    message: str
    evidence: Mapping[str, Any]
    category: str = ""
    method: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form used by ``--json`` output and audit records."""
        return {
            "index": self.index,
            "name": self.name,
            "severity": self.severity,
            "message": self.message,
            "evidence": dict(self.evidence),
            "category": self.category,
            "method": self.method,
        }


@dataclass(frozen=True, slots=True)
class Verdict:
    """The result of validating one execution against one contract."""

    status: VerdictStatus
    contract_name: str
    contract_version: str
    execution_id: str
    checks_performed: int
    checks_passed: int
    violations: tuple[Violation, ...] = ()
    skipped: tuple[int, ...] = ()  # indices of `when` constraints whose condition was false
    constraint_names: tuple[str, ...] = ()  # every constraint, by index, for audit checklists

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "status": self.status,
            "contract_name": self.contract_name,
            "contract_version": self.contract_version,
            "execution_id": self.execution_id,
            "checks_performed": self.checks_performed,
            "checks_passed": self.checks_passed,
            "skipped": list(self.skipped),
            "constraint_names": list(self.constraint_names),
            "violations": [violation.to_dict() for violation in self.violations],
        }
