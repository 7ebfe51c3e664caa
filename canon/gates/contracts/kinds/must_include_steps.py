"""``must_include_steps``: every listed step ran (and did not end in error)."""

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
class MustIncludeSteps:
    """Every listed step ran (and did not end in error)."""

    steps: tuple[str, ...]
    severity: Severity = "error"
    category: ClassVar[str] = "step"
    method: ClassVar[str] = "deterministic"

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", names(self.steps, "steps"))
        check_severity(self.severity)

    @property
    def name(self) -> str:
        return f"must_include_steps({list(self.steps)!r})"

    def check(self, facts: Facts) -> Finding | None:
        missing = [step for step in self.steps if not facts.ran(step)]
        if not missing:
            return None
        evidence: dict[str, object] = {
            "required": list(self.steps),
            "present": sorted(facts.name_set),
            "missing": missing,
        }
        failed = [step for step in missing if step in facts.failed_only]
        message = f"required steps missing: {', '.join(missing)}"
        if failed:
            evidence["failed"] = failed
            message += f" ({', '.join(failed)} ran but ended in error)"
        reading = facts.execution.reading
        if reading is not None:  # so a misread trace is not taken for a missing step
            evidence["read"] = reading.to_dict()
            message += f"; {reading.describe()}"
        return Finding(message, evidence)


def must_include_steps(steps: Iterable[str], *, severity: str = "error") -> MustIncludeSteps:
    """Every listed step must run successfully."""
    return MustIncludeSteps(listed(steps), check_severity(severity))


KIND = ConstraintKind(
    type="must_include_steps",
    constraint=MustIncludeSteps,
    required=("steps",),
    optional=(),
    build=lambda params, severity: MustIncludeSteps(step_names(params["steps"]), severity),
    dump=lambda constraint: {"steps": list(constraint.steps)},
    summary="every step in `steps:` ran and did not end in error",
)
