"""Canon: coherence regression tests for AI agents.

Everything a user's tests need is importable from here; other modules are internal.
"""

from canon.core.artifact import Artifact
from canon.core.constitution import Constitution, Principle
from canon.core.rubric import Choice, Question, Rubric
from canon.core.scoring import Answer, ArtifactResult, Cell, relevant_questions
from canon.core.stats import wilson_ci
from canon.errors import CanonError
from canon.metric import CoherenceMetric
from canon.store import constitution_from_file, load_rubric

__all__ = [
    "Answer",
    "Artifact",
    "ArtifactResult",
    "CanonError",
    "Cell",
    "Choice",
    "CoherenceMetric",
    "Constitution",
    "Principle",
    "Question",
    "Rubric",
    "constitution_from_file",
    "load_rubric",
    "relevant_questions",
    "wilson_ci",
]
