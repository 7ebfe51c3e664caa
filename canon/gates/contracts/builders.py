"""The Python API for writing contracts in code, mirroring the YAML constraint types."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from canon.gates.contracts.conditions import Condition, condition_from
from canon.gates.contracts.constraints import (
    DEFAULT_ESCALATION_MARKERS,
    Constraint,
    MustContainCitations,
    MustEscalateWhen,
    MustIncludeSteps,
    MustNotIncludeSteps,
    MustNotUseOnlyParametricKnowledge,
    MustPrecede,
    MustRetrieveFrom,
    When,
    check_severity,
)
from canon.gates.contracts.execution import Execution

ConditionLike = Callable[[Execution], bool] | Mapping[str, Any] | Condition


def must_retrieve_from(sources: Iterable[str], *, severity: str = "error") -> MustRetrieveFrom:
    """Every listed data source must be consulted."""
    return MustRetrieveFrom(_listed(sources), check_severity(severity))


def must_not_use_only_parametric_knowledge(
    *, severity: str = "error"
) -> MustNotUseOnlyParametricKnowledge:
    """At least one tool call or retrieval must succeed."""
    return MustNotUseOnlyParametricKnowledge(check_severity(severity))


def must_include_steps(steps: Iterable[str], *, severity: str = "error") -> MustIncludeSteps:
    """Every listed step must run successfully."""
    return MustIncludeSteps(_listed(steps), check_severity(severity))


def must_not_include_steps(steps: Iterable[str], *, severity: str = "error") -> MustNotIncludeSteps:
    """None of the listed steps may appear."""
    return MustNotIncludeSteps(_listed(steps), check_severity(severity))


def must_precede(before: str, after: str, *, severity: str = "error") -> MustPrecede:
    """``before`` must succeed before ``after`` is first attempted."""
    return MustPrecede(before, after, check_severity(severity))


def must_contain_citations(min_count: int = 1, *, severity: str = "error") -> MustContainCitations:
    """The final answer must carry at least ``min_count`` distinct citations."""
    return MustContainCitations(min_count, check_severity(severity))


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
        _listed(markers),
        check_severity(severity),
    )


def when(condition: ConditionLike, constraint: Constraint, description: str = "") -> When:
    """Gate ``constraint`` on ``condition``; while the condition is false it passes."""
    return When(condition_from(condition, description), constraint)


def _listed(values: Iterable[str]) -> tuple[str, ...]:
    # A bare string is a single name, never a sequence of characters.
    if isinstance(values, str):
        return (values,)
    return tuple(values)
