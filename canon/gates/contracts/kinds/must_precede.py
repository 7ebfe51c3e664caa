"""``must_precede``: ``before`` succeeded before ``after`` was first attempted."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from canon.gates.contracts.errors import ContractError
from canon.gates.contracts.facts import Facts, Finding
from canon.gates.contracts.kinds.base import ConstraintKind, Severity, check_severity, step_names


@dataclass(frozen=True, slots=True)
class MustPrecede:
    """``before`` succeeded before ``after`` was first attempted (vacuous when neither ran)."""

    before: str
    after: str
    severity: Severity = "error"
    category: ClassVar[str] = "step"
    method: ClassVar[str] = "deterministic"

    def __post_init__(self) -> None:
        for field_name in ("before", "after"):
            value = getattr(self, field_name)
            if not isinstance(value, str) or not value:
                raise ContractError(f"{field_name}: expected a step name, got {value!r}")
        if self.before == self.after:
            raise ContractError(
                f"before and after are both {self.before!r}; a step cannot precede itself"
            )
        check_severity(self.severity)

    @property
    def name(self) -> str:
        return f"must_precede({self.before}, {self.after})"

    def check(self, facts: Facts) -> Finding | None:
        after_at = facts.first_at(self.after)
        if after_at is None:
            return None
        before_at = facts.succeeded_first_at(self.before)
        if before_at is None:
            return Finding(
                f"{self.after} ran but {self.before} never ran successfully before it",
                {"expected_before": self.before, "steps": list(facts.names)},
            )
        if before_at < after_at:
            return None
        return Finding(
            f"{self.after} ran before {self.before}",
            {
                "expected_before": self.before,
                "expected_after": self.after,
                "actual_order": list(facts.names),
            },
        )


def must_precede(before: str, after: str, *, severity: str = "error") -> MustPrecede:
    """``before`` must succeed before ``after`` is first attempted."""
    return MustPrecede(before, after, check_severity(severity))


KIND = ConstraintKind(
    type="must_precede",
    constraint=MustPrecede,
    required=("before", "after"),
    optional=(),
    build=lambda params, severity: MustPrecede(
        step_names(params["before"]), step_names(params["after"]), severity
    ),
    dump=lambda constraint: {"before": constraint.before, "after": constraint.after},
    summary="step `before:` succeeded before step `after:` was first attempted (holds when "
    "`after` never ran)",
)
