"""Validate an execution against a contract."""

from __future__ import annotations

from collections.abc import Mapping

from canon.gates.contracts.constraints import When
from canon.gates.contracts.execution import DataSource, Execution
from canon.gates.contracts.facts import Facts
from canon.gates.contracts.loader import merge_source_maps
from canon.gates.contracts.model import Contract, Verdict, VerdictStatus, Violation


def validate(
    contract: Contract,
    execution: Execution,
    *,
    source_map: Mapping[str, DataSource] | None = None,
) -> Verdict:
    """Check every constraint; FAIL on any error-severity violation, else WARN on any warning.

    ``source_map`` is laid over the contract's own map (it wins where both name a tool).
    """
    mapping = contract.source_map
    if source_map:
        mapping, _ = merge_source_maps(contract.source_map, source_map)
    facts = Facts(execution, mapping)
    violations: list[Violation] = []
    skipped: list[int] = []
    for index, constraint in enumerate(contract.constraints):
        target = constraint
        if isinstance(constraint, When):
            if not constraint.applies(facts):
                skipped.append(index)
                continue
            target = constraint.inner
        finding = target.check(facts)
        if finding is not None:
            violations.append(
                Violation(
                    index=index,
                    name=constraint.name,
                    severity=constraint.severity,
                    message=finding.message,
                    evidence=finding.evidence,
                    category=constraint.category,
                    method=constraint.method,
                )
            )
    status: VerdictStatus = "pass"
    if any(violation.severity == "error" for violation in violations):
        status = "fail"
    elif violations:
        status = "warn"
    return Verdict(
        status=status,
        contract_name=contract.name,
        contract_version=contract.version,
        execution_id=execution.execution_id,
        checks_performed=len(contract.constraints),
        checks_passed=len(contract.constraints) - len(violations),
        violations=tuple(violations),
        skipped=tuple(skipped),
        constraint_names=contract.constraint_names,
    )
