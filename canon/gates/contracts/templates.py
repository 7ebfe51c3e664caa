"""The bundled domain contracts, stored as YAML data files next to this module."""

from __future__ import annotations

from functools import cache
from importlib import resources

from canon.gates.contracts.errors import ContractError
from canon.gates.contracts.loader import load_contract
from canon.gates.contracts.model import Contract

TEMPLATE_NAMES: tuple[str, ...] = (
    "claims-processing-v1",
    "clinical-decision-support-v1",
    "kyc-aml-screening-v1",
)


def template_text(name: str) -> str:
    """The YAML source of a bundled template (a starting point for your own contract)."""
    if name not in TEMPLATE_NAMES:
        raise ContractError(
            f"no bundled contract template named {name!r}; available: {', '.join(TEMPLATE_NAMES)}"
        )
    return resources.files(__package__).joinpath("templates", f"{name}.yaml").read_text("utf-8")


@cache
def load_template(name: str) -> Contract:
    """Load a bundled template by name."""
    return load_contract(template_text(name), origin=f"template {name}")


def list_templates() -> tuple[Contract, ...]:
    """Every bundled template, in name order."""
    return tuple(load_template(name) for name in TEMPLATE_NAMES)
