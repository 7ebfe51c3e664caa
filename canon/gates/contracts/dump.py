"""Writing contracts back out as YAML (for ``canon contract generate``)."""

from __future__ import annotations

from typing import Any

import yaml

from canon.gates.contracts.constraints import Constraint, When
from canon.gates.contracts.errors import ContractError
from canon.gates.contracts.kinds import KIND_BY_CLASS, KINDS
from canon.gates.contracts.kinds.base import ConstraintKind
from canon.gates.contracts.model import Contract


def _parameters(constraint: Constraint, kinds: tuple[ConstraintKind, ...]) -> dict[str, Any]:
    by_class = KIND_BY_CLASS if kinds is KINDS else {kind.constraint: kind for kind in kinds}
    kind = by_class.get(type(constraint))
    if kind is None or kind.dump is None:
        raise ContractError(
            f"{constraint.name} cannot be written as YAML; write it by hand in the contract file"
        )
    return {"type": kind.type, **kind.dump(constraint)}


def constraint_to_mapping(
    constraint: Constraint, kinds: tuple[ConstraintKind, ...] = KINDS
) -> dict[str, Any]:
    """The YAML form of one constraint (``severity`` always spelled out), through ``kinds``."""
    if isinstance(constraint, When):
        if constraint.raw_condition is None:
            raise ContractError(f"{constraint.name} uses a Python condition; it has no YAML form")
        mapping = constraint_to_mapping(constraint.inner, kinds)
        mapping["when"] = dict(constraint.raw_condition)
        return mapping
    mapping = _parameters(constraint, kinds)
    mapping["severity"] = constraint.severity
    return mapping


def contract_to_mapping(
    contract: Contract, kinds: tuple[ConstraintKind, ...] = KINDS
) -> dict[str, Any]:
    """The YAML form of a contract, keys in reading order."""
    mapping: dict[str, Any] = {"name": contract.name, "version": contract.version}
    if contract.description:
        mapping["description"] = contract.description
    if contract.source_map:
        mapping["source_map"] = {
            tool: {"source_name": source.name, "source_type": source.type}
            for tool, source in contract.source_map.items()
        }
    mapping["constraints"] = [constraint_to_mapping(item, kinds) for item in contract.constraints]
    return mapping


def dump_contract(contract: Contract, *, kinds: tuple[ConstraintKind, ...] = KINDS) -> str:
    """Render a contract as YAML text that ``load_contract`` reads back to the same contract."""
    dumped: str = yaml.safe_dump(
        contract_to_mapping(contract, kinds), sort_keys=False, allow_unicode=True, width=100
    )
    return dumped
