"""``must_not_include_steps``: none of the listed steps appears, not even as a failed attempt."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from canon.gates.contracts.facts import Facts, Finding
from canon.gates.contracts.kinds.base import (
    ConstraintKind,
    Severity,
    check_severity,
    listed,
    names,
    step_names,
)


@dataclass(frozen=True, slots=True)
class MustNotIncludeSteps:
    """None of the listed steps appears, not even as a failed attempt."""

    steps: tuple[str, ...]
    severity: Severity = "error"
    category: ClassVar[str] = "step"
    method: ClassVar[str] = "deterministic"

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", names(self.steps, "steps"))
        check_severity(self.severity)

    @property
    def name(self) -> str:
        return f"must_not_include_steps({list(self.steps)!r})"

    def check(self, facts: Facts) -> Finding | None:
        found = [step for step in self.steps if facts.present(step)]
        if not found:
            return None
        return Finding(
            f"forbidden steps present: {', '.join(found)}",
            {"forbidden": list(self.steps), "found": found, "steps": sorted(facts.name_set)},
        )


def must_not_include_steps(steps: Iterable[str], *, severity: str = "error") -> MustNotIncludeSteps:
    """None of the listed steps may appear."""
    return MustNotIncludeSteps(listed(steps), check_severity(severity))


KIND = ConstraintKind(
    type="must_not_include_steps",
    constraint=MustNotIncludeSteps,
    required=("steps",),
    optional=(),
    build=lambda params, severity: MustNotIncludeSteps(step_names(params["steps"]), severity),
    dump=lambda constraint: {"steps": list(constraint.steps)},
    summary="no step in `steps:` appears, not even as a failed attempt",
)
