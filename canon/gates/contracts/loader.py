"""Strict loading of contracts from YAML text or a mapping, and dumping them back.

Every mistake is a ``ContractError`` naming the constraint (``constraints[2]``) and the
offending key, because a typo that silently disables a check is worse than a crash.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

import yaml

from canon.gates.contracts.conditions import parse_condition
from canon.gates.contracts.constraints import Constraint, When, check_severity
from canon.gates.contracts.errors import ContractError
from canon.gates.contracts.execution import DataSource
from canon.gates.contracts.kinds import KIND_BY_TYPE, KINDS, by_type
from canon.gates.contracts.kinds.base import ConstraintKind
from canon.gates.contracts.model import Contract
from canon.gates.yaml_mapping import unique_key_mapping

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[misc]
    """A safe loader (C-accelerated when available) that refuses duplicate keys.

    A second ``constraints:`` would otherwise replace the first list, and a trace that
    should fail would pass.
    """


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, unique_key_mapping)
_COMMON_KEYS = ("type", "severity", "when")
_TOP_KEYS = ("name", "version", "description", "source_map", "constraints")

PYTHON_SUFFIXES = (".py", ".pyw")
PYTHON_CONTRACT_MESSAGE = (
    "Python contract files are not read; write the contract as YAML (see docs/contracts.md)"
)
# Lines only Python starts at column 0; a YAML mapping has keys there. The reference package
# loads contracts from .py files, so these are what a migrating user's file holds.
_PYTHON_LINE = re.compile(
    r"^(?:from\s+[\w.]+\s+import\s|import\s+\w|def\s+\w+\s*\(|class\s+\w+\s*[(:]"
    r"|#!.*python|\w+\s*=\s*(?:Contract|\w+\.Contract)\s*\()",
    re.MULTILINE,
)


def _constraint(raw: object, where: str, kinds: Mapping[str, ConstraintKind]) -> Constraint:
    if not isinstance(raw, Mapping):
        raise ContractError(f"{where}: expected a mapping with a 'type' key, got {raw!r}")
    type_name = raw.get("type")
    if not isinstance(type_name, str) or type_name not in kinds:  # a list would not hash
        raise ContractError(
            f"{where}: unknown constraint type {type_name!r}; expected one of {', '.join(kinds)}"
        )
    kind = kinds[type_name]
    where = f"{where} ({type_name})"
    allowed = (*_COMMON_KEYS, *kind.required, *kind.optional)
    for key in raw:
        if key not in allowed:
            raise ContractError(
                f"{where}: unknown key {key!r}; allowed keys: {', '.join(sorted(allowed))}"
            )
    for key in kind.required:
        if key not in raw:
            raise ContractError(f"{where}: missing required key {key!r}")
    severity = check_severity(raw.get("severity", "error"), f"{where}.severity")
    params = dict(raw)
    for key in kind.conditions:
        if key in params:
            params[key] = parse_condition(raw[key], f"{where}.{key}")
    try:
        constraint = kind.build(params, severity)
    except ContractError as exc:
        raise ContractError(f"{where}: {exc}") from None
    # `when: {}` (or null) is unconditional, as the reference reads it
    if "when" in raw and raw["when"] not in (None, {}):
        condition = parse_condition(raw["when"], f"{where}.when")
        return When(condition, constraint, raw["when"])
    return constraint


def _data_source(tool: object, raw: object, where: str) -> DataSource:
    if not isinstance(tool, str) or not tool:
        raise ContractError(f"{where}: tool names must be non-empty strings, got {tool!r}")
    if not isinstance(raw, Mapping):
        raise ContractError(f"{where}.{tool}: expected a mapping with source_name, source_type")
    for key in raw:
        if key not in ("source_name", "source_type", "version"):
            raise ContractError(
                f"{where}.{tool}: unknown key {key!r}; allowed: source_name, source_type, version"
            )
    name = raw.get("source_name")
    if not isinstance(name, str) or not name:
        raise ContractError(f"{where}.{tool}.source_name: expected a source name, got {name!r}")
    kind = raw.get("source_type", "unknown")
    if not isinstance(kind, str) or not kind:
        raise ContractError(f"{where}.{tool}.source_type: expected text, got {kind!r}")
    return DataSource(name=name, type=kind)


def parse_source_map(raw: object, where: str = "source_map") -> dict[str, DataSource]:
    """Validate a tool → ``{source_name, source_type}`` mapping."""
    if raw is None:
        return {}
    if isinstance(raw, Mapping) and set(raw) == {"source_map"}:
        raw = raw["source_map"]  # a whole contract-style file holding only a source map
    if not isinstance(raw, Mapping):
        raise ContractError(f"{where}: expected a mapping of tool name to source, got {raw!r}")
    return {str(tool): _data_source(tool, entry, where) for tool, entry in raw.items()}


def merge_source_maps(
    own: Mapping[str, DataSource], given: Mapping[str, DataSource]
) -> tuple[dict[str, DataSource], tuple[str, ...]]:
    """The contract's own map with ``given`` laid over it, and the tools both map differently.

    The given map wins a clash: it is what the user named for this run, and a contract
    template cannot know the user's tool names.
    """
    clashes = tuple(
        sorted(tool for tool, source in given.items() if tool in own and own[tool] != source)
    )
    return {**own, **given}, clashes


def looks_like_python(text: str) -> bool:
    """True when ``text`` reads as Python source (imports, ``x = Contract(``) rather than YAML."""
    return _PYTHON_LINE.search(text) is not None


def parse_yaml(text: str, origin: str) -> Any:
    """Parse YAML text, turning syntax errors into ``ContractError`` with the position."""
    try:
        return yaml.load(text, Loader=_Loader)  # a safe loader, C-accelerated when available
    except yaml.YAMLError as exc:
        raise ContractError(f"{origin}: not valid YAML: {exc}".replace("\n", " ")) from None


_CONTRACT_SUFFIXES = (".yaml", ".yml", ".json", *PYTHON_SUFFIXES)


def _looks_like_path(text: str) -> bool:
    """Whether contract text is one line naming a file (the reference package's
    ``load_contract(name_or_path)`` took one)."""
    line = text.strip()
    return "\n" not in line and (line.lower().endswith(_CONTRACT_SUFFIXES) or "/" in line)


def _path_given(origin: str, path: object) -> str:
    return (
        f"{origin}: load_contract reads contract YAML text or a parsed mapping, not a path "
        f"({str(path)!r}); read a contract file (or a bundled template by name) with "
        "canon.project.contract_files.load_contract_file(path), or pass the file's text"
    )


def load_contract(
    source: str | Mapping[str, Any],
    *,
    origin: str = "<contract>",
    kinds: tuple[ConstraintKind, ...] = KINDS,
) -> Contract:
    """Build a ``Contract`` from YAML text or an already parsed mapping, strictly.

    ``kinds`` is the table of constraint kinds it reads (``kinds.KINDS``, the registry).
    """
    if isinstance(source, os.PathLike):
        raise ContractError(_path_given(origin, os.fspath(source)))
    raw = parse_yaml(source, origin) if isinstance(source, str) else source
    if not isinstance(raw, Mapping):
        if isinstance(source, str) and _looks_like_path(source):
            raise ContractError(_path_given(origin, source.strip()))
        raise ContractError(f"{origin}: a contract is a mapping with a constraints list")
    try:
        return _contract(raw, KIND_BY_TYPE if kinds is KINDS else by_type(kinds))
    except ContractError as exc:
        raise ContractError(f"{origin}: {exc}") from None


def _contract(raw: Mapping[str, Any], kinds: Mapping[str, ConstraintKind]) -> Contract:
    for key in raw:
        if key not in _TOP_KEYS:
            raise ContractError(f"unknown top-level key {key!r}; allowed: {', '.join(_TOP_KEYS)}")
    name = raw.get("name", "unnamed")
    if not isinstance(name, str) or not name:
        raise ContractError(f"name: expected text, got {name!r}")
    version = raw.get("version", "1.0.0")
    if isinstance(version, bool) or not isinstance(version, str | int | float):
        raise ContractError(f"version: expected text such as '1.0.0', got {version!r}")
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise ContractError(f"description: expected text, got {description!r}")
    constraints = raw.get("constraints")
    if not isinstance(constraints, list) or not constraints:
        raise ContractError(
            f"constraints: expected a non-empty list of constraints, got {constraints!r}"
        )
    return Contract(
        name=name,
        version=str(version),
        constraints=tuple(
            _constraint(item, f"constraints[{index}]", kinds)
            for index, item in enumerate(constraints)
        ),
        source_map=parse_source_map(raw.get("source_map")),
        description=description,
    )
