"""The constraint kinds a contract may use: one module per kind, one line per kind below.

The loader reads a constraint's ``type:`` and keys through this table, ``dump`` writes a
constraint back through it, and the docs' table of kinds is ``kinds_table()``. Adding a
kind is a module (see ``base.ConstraintKind`` and docs/development.md) and a line in
``KINDS``. Pure: imports only ``canon.gates.contracts`` modules below it.
"""

from __future__ import annotations

from canon.gates.contracts.kinds import (
    must_contain_citations,
    must_escalate_when,
    must_include_steps,
    must_not_include_steps,
    must_not_use_only_parametric_knowledge,
    must_precede,
    must_retrieve_from,
)
from canon.gates.contracts.kinds.base import ConstraintKind

KINDS: tuple[ConstraintKind, ...] = (
    must_retrieve_from.KIND,
    must_not_use_only_parametric_knowledge.KIND,
    must_include_steps.KIND,
    must_not_include_steps.KIND,
    must_precede.KIND,
    must_contain_citations.KIND,
    must_escalate_when.KIND,
)


def by_type(kinds: tuple[ConstraintKind, ...]) -> dict[str, ConstraintKind]:
    """The kinds by YAML ``type``; two kinds of one type, or of one class, are refused."""
    table: dict[str, ConstraintKind] = {}
    classes: dict[type, str] = {}
    for kind in kinds:
        if kind.type in table:
            raise ValueError(f"two constraint kinds are registered as {kind.type!r}")
        if kind.constraint in classes:
            raise ValueError(
                f"constraint kinds {classes[kind.constraint]!r} and {kind.type!r} share the "
                f"class {kind.constraint.__name__}"
            )
        table[kind.type] = kind
        classes[kind.constraint] = kind.type
    return table


def kinds_table(kinds: tuple[ConstraintKind, ...] = KINDS) -> str:
    """The Markdown table of kinds that docs/contracts.md shows (a test keeps them equal)."""
    rows = ["| type | keys | checks |", "|---|---|---|"]
    for kind in kinds:
        keys = [f"`{key}`" for key in kind.required]
        keys += [f"`{key}` (optional)" for key in kind.optional]
        rows.append(f"| `{kind.type}` | {', '.join(keys) or 'none'} | {kind.summary} |")
    return "\n".join(rows) + "\n"


KIND_BY_TYPE = by_type(KINDS)
KIND_BY_CLASS: dict[type, ConstraintKind] = {kind.constraint: kind for kind in KINDS}
CONSTRAINT_TYPES: tuple[str, ...] = tuple(KIND_BY_TYPE)

__all__ = ["CONSTRAINT_TYPES", "KINDS", "KIND_BY_CLASS", "KIND_BY_TYPE", "ConstraintKind"]
