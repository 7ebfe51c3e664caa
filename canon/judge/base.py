"""The judge protocol: one question about one artifact under one constitution."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from canon.core.artifact import Artifact
from canon.core.constitution import Constitution
from canon.core.rubric import Question
from canon.core.scoring import Answer


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """Everything a judge needs to answer one question."""

    question: Question
    artifact: Artifact
    constitution: Constitution
    instructions: str  # the rubric's standing instructions to the judge


@runtime_checkable
class Judge(Protocol):
    """Anything that answers rubric questions; async at its core."""

    @property
    def name(self) -> str:
        """How the judge is recorded in baselines (e.g. ``openai/gpt-4o`` or ``mock``)."""
        ...

    async def answer(self, request: JudgeRequest) -> Answer:
        """Answer one question with a distribution over its choices."""
        ...
