"""``must_not_use_only_parametric_knowledge``: some successful step was a tool call or a
retrieval."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from canon.gates.contracts.facts import Facts, Finding
from canon.gates.contracts.kinds.base import ConstraintKind, Severity, check_severity


@dataclass(frozen=True, slots=True)
class MustNotUseOnlyParametricKnowledge:
    """Some successful step was a tool call or a retrieval."""

    severity: Severity = "error"
    category: ClassVar[str] = "source"
    method: ClassVar[str] = "deterministic"

    def __post_init__(self) -> None:
        check_severity(self.severity)

    @property
    def name(self) -> str:
        return "must_not_use_only_parametric_knowledge"

    def check(self, facts: Facts) -> Finding | None:
        if facts.grounded:
            return None
        return Finding(
            "no successful tool call or retrieval: the answer rests on parametric knowledge only",
            {"step_types": list(facts.kinds)},
        )


def must_not_use_only_parametric_knowledge(
    *, severity: str = "error"
) -> MustNotUseOnlyParametricKnowledge:
    """At least one tool call or retrieval must succeed."""
    return MustNotUseOnlyParametricKnowledge(check_severity(severity))


KIND = ConstraintKind(
    type="must_not_use_only_parametric_knowledge",
    constraint=MustNotUseOnlyParametricKnowledge,
    required=(),
    optional=(),
    build=lambda params, severity: MustNotUseOnlyParametricKnowledge(severity),
    dump=lambda constraint: {},
    summary="some successful step was a tool call or a retrieval",
)
