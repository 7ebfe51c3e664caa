"""Writing contracts back out as YAML (for ``canon contract generate``)."""

from __future__ import annotations

from typing import Any

import yaml

from canon.gates.contracts.constraints import (
    Constraint,
    MustContainCitations,
    MustIncludeSteps,
    MustNotIncludeSteps,
    MustNotUseOnlyParametricKnowledge,
    MustPrecede,
    MustRetrieveFrom,
    When,
)
from canon.gates.contracts.errors import ContractError
from canon.gates.contracts.model import Contract


def _parameters(constraint: Constraint) -> dict[str, Any]:
    if isinstance(constraint, MustRetrieveFrom):
        return {"type": "must_retrieve_from", "sources": list(constraint.sources)}
    if isinstance(constraint, MustNotUseOnlyParametricKnowledge):
        return {"type": "must_not_use_only_parametric_knowledge"}
    if isinstance(constraint, MustIncludeSteps):
        return {"type": "must_include_steps", "steps": list(constraint.steps)}
    if isinstance(constraint, MustNotIncludeSteps):
        return {"type": "must_not_include_steps", "steps": list(constraint.steps)}
    if isinstance(constraint, MustPrecede):
        return {"type": "must_precede", "before": constraint.before, "after": constraint.after}
    if isinstance(constraint, MustContainCitations):
        return {"type": "must_contain_citations", "min_count": constraint.min_count}
    raise ContractError(
        f"{constraint.name} cannot be written as YAML; write it by hand in the contract file"
    )


def constraint_to_mapping(constraint: Constraint) -> dict[str, Any]:
    """The YAML form of one constraint (``severity`` always spelled out)."""
    if isinstance(constraint, When):
        if constraint.raw_condition is None:
            raise ContractError(f"{constraint.name} uses a Python condition; it has no YAML form")
        mapping = constraint_to_mapping(constraint.inner)
        mapping["when"] = dict(constraint.raw_condition)
        return mapping
    mapping = _parameters(constraint)
    mapping["severity"] = constraint.severity
    return mapping


def contract_to_mapping(contract: Contract) -> dict[str, Any]:
    """The YAML form of a contract, keys in reading order."""
    mapping: dict[str, Any] = {"name": contract.name, "version": contract.version}
    if contract.description:
        mapping["description"] = contract.description
    if contract.source_map:
        mapping["source_map"] = {
            tool: {"source_name": source.name, "source_type": source.type}
            for tool, source in contract.source_map.items()
        }
    mapping["constraints"] = [constraint_to_mapping(item) for item in contract.constraints]
    return mapping


def dump_contract(contract: Contract) -> str:
    """Render a contract as YAML text that ``load_contract`` reads back to the same contract."""
    dumped: str = yaml.safe_dump(
        contract_to_mapping(contract), sort_keys=False, allow_unicode=True, width=100
    )
    return dumped
