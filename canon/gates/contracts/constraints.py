"""The ``when`` wrapper that gates any constraint, and the constraint kinds by their classes.

Each kind lives in its own module under ``kinds/`` (its value, schema, builder and docs
line) and is listed once in ``kinds/__init__.py``; the names here are the classes'
long-standing import path. Names, categories and evidence keys are part of the audit format.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from canon.gates.contracts.conditions import Condition
from canon.gates.contracts.facts import Facts, Finding
from canon.gates.contracts.kinds.base import SEVERITIES, Constraint, Severity, check_severity
from canon.gates.contracts.kinds.must_contain_citations import MustContainCitations
from canon.gates.contracts.kinds.must_escalate_when import (
    DEFAULT_ESCALATION_MARKERS,
    MustEscalateWhen,
)
from canon.gates.contracts.kinds.must_include_steps import MustIncludeSteps
from canon.gates.contracts.kinds.must_not_include_steps import MustNotIncludeSteps
from canon.gates.contracts.kinds.must_not_use_only_parametric_knowledge import (
    MustNotUseOnlyParametricKnowledge,
)
from canon.gates.contracts.kinds.must_precede import MustPrecede
from canon.gates.contracts.kinds.must_retrieve_from import MustRetrieveFrom

__all__ = [
    "DEFAULT_ESCALATION_MARKERS",
    "SEVERITIES",
    "Constraint",
    "MustContainCitations",
    "MustEscalateWhen",
    "MustIncludeSteps",
    "MustNotIncludeSteps",
    "MustNotUseOnlyParametricKnowledge",
    "MustPrecede",
    "MustRetrieveFrom",
    "Severity",
    "When",
    "check_severity",
]


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
