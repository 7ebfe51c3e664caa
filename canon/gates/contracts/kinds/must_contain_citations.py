"""``must_contain_citations``: the final answer cites at least ``min_count`` distinct sources."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from canon.gates.contracts.errors import ContractError
from canon.gates.contracts.facts import Facts, Finding
from canon.gates.contracts.kinds.base import ConstraintKind, Severity, check_severity


@dataclass(frozen=True, slots=True)
class MustContainCitations:
    """The final answer cites at least ``min_count`` distinct sources."""

    min_count: int = 1
    severity: Severity = "error"
    category: ClassVar[str] = "output"
    method: ClassVar[str] = "heuristic"

    def __post_init__(self) -> None:
        if isinstance(self.min_count, bool) or not isinstance(self.min_count, int):
            raise ContractError(f"min_count: expected an integer, got {self.min_count!r}")
        if self.min_count < 0:
            raise ContractError(f"min_count: expected 0 or more, got {self.min_count}")
        check_severity(self.severity)

    @property
    def name(self) -> str:
        return f"output_must_contain_citations(min={self.min_count})"

    def check(self, facts: Facts) -> Finding | None:
        if self.min_count == 0:
            return None
        output = facts.execution.output_text
        if not output:
            return Finding(
                "no final output found to look for citations in",
                {"output_text": None, "min_required": self.min_count},
            )
        found = facts.citations
        if len(found) >= self.min_count:
            return None
        return Finding(
            f"found {len(found)} citation(s), need at least {self.min_count}",
            {
                "found_citations": list(found),
                "min_required": self.min_count,
                "output_preview": output[:200],
            },
        )


def must_contain_citations(min_count: int = 1, *, severity: str = "error") -> MustContainCitations:
    """The final answer must carry at least ``min_count`` distinct citations."""
    return MustContainCitations(min_count, check_severity(severity))


KIND = ConstraintKind(
    type="must_contain_citations",
    constraint=MustContainCitations,
    required=(),
    optional=("min_count",),
    build=lambda params, severity: MustContainCitations(params.get("min_count", 1), severity),
    dump=lambda constraint: {"min_count": constraint.min_count},
    summary="the final answer cites at least `min_count:` (default 1) distinct sources "
    "(a heuristic)",
)
