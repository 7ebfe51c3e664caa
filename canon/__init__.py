"""Canon: coherence regression tests for AI agents.

Everything a user's tests need is importable from here; other modules are internal.
Names load on first use, so ``canon --help`` and plugin start-up stay fast.
The module's own helpers are imported under private names (and there is no
``from __future__ import annotations``) so ``dir(canon)`` shows only the public API.
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from canon.check.capture import TraceCapture, capture_trace
    from canon.check.metric import CoherenceMetric
    from canon.core.artifact import Artifact, Message
    from canon.core.baseline import Baseline
    from canon.core.compare import Comparison, gate
    from canon.core.constitution import Constitution, Principle
    from canon.core.rubric import Choice, Question, Rubric
    from canon.core.scoring import Answer, ArtifactResult, Cell, relevant_questions
    from canon.core.stats import wilson_ci
    from canon.errors import CanonError
    from canon.judge.mock import MockJudge
    from canon.project.store import constitution_from_file, load_rubric

_HOMES = {
    "Answer": "canon.core.scoring",
    "Artifact": "canon.core.artifact",
    "ArtifactResult": "canon.core.scoring",
    "Baseline": "canon.core.baseline",
    "CanonError": "canon.errors",
    "Cell": "canon.core.scoring",
    "Choice": "canon.core.rubric",
    "CoherenceMetric": "canon.check.metric",
    "Comparison": "canon.core.compare",
    "Constitution": "canon.core.constitution",
    "Message": "canon.core.artifact",
    "MockJudge": "canon.judge.mock",
    "Principle": "canon.core.constitution",
    "Question": "canon.core.rubric",
    "Rubric": "canon.core.rubric",
    "TraceCapture": "canon.check.capture",
    "capture_trace": "canon.check.capture",
    "constitution_from_file": "canon.project.store",
    "gate": "canon.core.compare",
    "load_rubric": "canon.project.store",
    "relevant_questions": "canon.core.scoring",
    "wilson_ci": "canon.core.stats",
}

__all__ = [
    "Answer",
    "Artifact",
    "ArtifactResult",
    "Baseline",
    "CanonError",
    "Cell",
    "Choice",
    "CoherenceMetric",
    "Comparison",
    "Constitution",
    "Message",
    "MockJudge",
    "Principle",
    "Question",
    "Rubric",
    "TraceCapture",
    "capture_trace",
    "constitution_from_file",
    "gate",
    "load_rubric",
    "relevant_questions",
    "wilson_ci",
]


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'canon' has no attribute {name!r}")
    value = getattr(_importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this hook
    return value


def __dir__() -> list[str]:
    """The public API plus the standard module attributes (``__name__``, ``__doc__``...)."""
    return sorted({name for name in globals() if name.startswith("__")} | set(__all__))
