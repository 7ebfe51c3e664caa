"""``must_escalate_when``: when a condition holds, some step escalated to a human."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from canon.gates.contracts.conditions import Condition, condition_from
from canon.gates.contracts.errors import ContractError
from canon.gates.contracts.execution import Execution
from canon.gates.contracts.facts import Facts, Finding
from canon.gates.contracts.kinds.base import (
    ConstraintKind,
    Severity,
    check_severity,
    listed,
    names,
    step_names,
)

DEFAULT_ESCALATION_MARKERS = ("flag_for_human_review", "escalate", "human_review")
ConditionLike = Callable[[Execution], bool] | Mapping[str, Any] | Condition


@dataclass(frozen=True, slots=True)
class MustEscalateWhen:
    """When ``condition`` holds, some step escalated to a human."""

    condition: Condition
    description: str
    escalation_markers: tuple[str, ...] = DEFAULT_ESCALATION_MARKERS
    severity: Severity = "error"
    category: ClassVar[str] = "escalation"
    method: ClassVar[str] = "deterministic"

    def __post_init__(self) -> None:
        markers = names(self.escalation_markers, "escalation_markers")
        object.__setattr__(self, "escalation_markers", markers)
        if not isinstance(self.description, str) or not self.description:
            raise ContractError(f"description: expected text, got {self.description!r}")
        check_severity(self.severity)

    @property
    def name(self) -> str:
        return f"must_escalate_when({self.description})"

    def check(self, facts: Facts) -> Finding | None:
        if not self.condition.holds(facts):
            return None
        if any(facts.ran(marker) for marker in self.escalation_markers):
            return None
        if "human_review" in facts.succeeded_kinds:
            return None
        return Finding(
            f"escalation required ({self.description}) but no escalation step ran",
            {
                "condition": self.description,
                "escalation_markers_checked": list(self.escalation_markers),
                "steps_found": list(facts.names),
            },
        )


def must_escalate_when(
    condition_fn: ConditionLike,
    description: str,
    *,
    escalation_markers: Iterable[str] | None = None,
    severity: str = "error",
) -> MustEscalateWhen:
    """When the condition holds, a step named like an escalation marker must run."""
    markers = DEFAULT_ESCALATION_MARKERS if escalation_markers is None else escalation_markers
    return MustEscalateWhen(
        condition_from(condition_fn, description),
        description,
        listed(markers),
        check_severity(severity),
    )


def _build(params: Mapping[str, Any], severity: Severity) -> MustEscalateWhen:
    markers = params.get("escalation_markers")
    return MustEscalateWhen(
        params["condition"],
        params["description"],
        # null means the default markers, as in the reference and the Python API
        DEFAULT_ESCALATION_MARKERS if markers is None else step_names(markers),
        severity,
    )


KIND = ConstraintKind(
    type="must_escalate_when",
    constraint=MustEscalateWhen,
    required=("condition", "description"),
    optional=("escalation_markers",),
    build=_build,
    dump=None,  # a condition written in Python has no YAML form; write it by hand
    summary="when `condition:` (the keys of `when:`) holds, a step named like one of "
    "`escalation_markers:` (default: flag_for_human_review, escalate, human_review) or a "
    "human-review step ran; `description:` names the rule",
    conditions=("condition",),
)
