"""The seven constraint kinds, plus the ``when`` wrapper that gates any of them.

Each constraint is a frozen value with a stable ``name`` (the form the reference package
prints, so reports read the same) and a ``check`` that returns a ``Finding`` when the
execution violates it. Names, categories and evidence keys are part of the audit format.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol

from canon.gates.contracts.conditions import Condition
from canon.gates.contracts.errors import ContractError
from canon.gates.contracts.facts import Facts, Finding

Severity = Literal["error", "warning"]
SEVERITIES: tuple[str, ...] = ("error", "warning")
DEFAULT_ESCALATION_MARKERS = ("flag_for_human_review", "escalate", "human_review")


class Constraint(Protocol):
    """One rule a contract checks against an execution."""

    @property
    def category(self) -> str:
        """``source``, ``step``, ``output`` or ``escalation``."""
        ...

    @property
    def method(self) -> str:
        """``deterministic`` or ``heuristic``."""
        ...

    @property
    def severity(self) -> Severity:
        """``error`` makes the verdict fail, ``warning`` makes it warn."""
        ...

    @property
    def name(self) -> str:
        """The constraint's printed name."""
        ...

    def check(self, facts: Facts) -> Finding | None:
        """Return why the execution violates the constraint, or None."""
        ...


def check_severity(severity: object, where: str = "severity") -> Severity:
    """Return ``severity`` when it is one the verdict understands; raise otherwise."""
    if severity == "error" or severity == "warning":
        return severity
    raise ContractError(f"{where}: unknown severity {severity!r}; expected 'error' or 'warning'")


def _names(values: object, what: str) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, list | tuple) or not values:
        raise ContractError(f"{what}: expected a non-empty list of names, got {values!r}")
    if not all(isinstance(value, str) and value for value in values):
        raise ContractError(f"{what}: every entry must be a non-empty string, got {values!r}")
    return tuple(values)


@dataclass(frozen=True, slots=True)
class MustRetrieveFrom:
    """Every listed data source was consulted by some successful step."""

    sources: tuple[str, ...]
    severity: Severity = "error"
    category: ClassVar[str] = "source"
    method: ClassVar[str] = "deterministic"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sources", _names(self.sources, "sources"))
        check_severity(self.severity)

    @property
    def name(self) -> str:
        return f"must_retrieve_from({list(self.sources)!r})"

    def check(self, facts: Facts) -> Finding | None:
        missing = [source for source in self.sources if not facts.consulted(source)]
        if not missing:
            return None
        return Finding(
            f"required data sources not consulted: {', '.join(missing)}",
            {
                "required": list(self.sources),
                "consulted": sorted(facts.sources),
                "missing": missing,
            },
        )


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


@dataclass(frozen=True, slots=True)
class MustIncludeSteps:
    """Every listed step ran (and did not end in error)."""

    steps: tuple[str, ...]
    severity: Severity = "error"
    category: ClassVar[str] = "step"
    method: ClassVar[str] = "deterministic"

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", _names(self.steps, "steps"))
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
        return Finding(message, evidence)


@dataclass(frozen=True, slots=True)
class MustNotIncludeSteps:
    """None of the listed steps appears, not even as a failed attempt."""

    steps: tuple[str, ...]
    severity: Severity = "error"
    category: ClassVar[str] = "step"
    method: ClassVar[str] = "deterministic"

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", _names(self.steps, "steps"))
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
        markers = _names(self.escalation_markers, "escalation_markers")
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


@dataclass(frozen=True, slots=True)
class When:
    """Evaluates ``inner`` only when ``condition`` holds; a skipped constraint passes."""

    condition: Condition
    inner: Constraint
    raw_condition: Mapping[str, Any] | None = None  # the YAML form, kept for dumping

    @property
    def category(self) -> str:
        return self.inner.category

    @property
    def method(self) -> str:
        return self.inner.method

    @property
    def severity(self) -> Severity:
        return self.inner.severity

    @property
    def name(self) -> str:
        return f"when({self.condition.description}): {self.inner.name}"

    def applies(self, facts: Facts) -> bool:
        """True when the gated constraint has to be evaluated."""
        return self.condition.holds(facts)

    def check(self, facts: Facts) -> Finding | None:
        return self.inner.check(facts) if self.applies(facts) else None
