"""The Python API for writing contracts in code, mirroring the YAML constraint types.

Each kind's builder lives in its module under ``kinds/``; ``when`` gates any of them.
"""

from __future__ import annotations

from canon.gates.contracts.conditions import condition_from
from canon.gates.contracts.constraints import When
from canon.gates.contracts.kinds.base import Constraint
from canon.gates.contracts.kinds.must_contain_citations import must_contain_citations
from canon.gates.contracts.kinds.must_escalate_when import ConditionLike, must_escalate_when
from canon.gates.contracts.kinds.must_include_steps import must_include_steps
from canon.gates.contracts.kinds.must_not_include_steps import must_not_include_steps
from canon.gates.contracts.kinds.must_not_use_only_parametric_knowledge import (
    must_not_use_only_parametric_knowledge,
)
from canon.gates.contracts.kinds.must_precede import must_precede
from canon.gates.contracts.kinds.must_retrieve_from import must_retrieve_from

__all__ = [
    "ConditionLike",
    "must_contain_citations",
    "must_escalate_when",
    "must_include_steps",
    "must_not_include_steps",
    "must_not_use_only_parametric_knowledge",
    "must_precede",
    "must_retrieve_from",
    "when",
]


def when(condition: ConditionLike, constraint: Constraint, description: str = "") -> When:
    """Gate ``constraint`` on ``condition``; while the condition is false it passes."""
    return When(condition_from(condition, description), constraint)
