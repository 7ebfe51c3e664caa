"""The judge protocol: one question about one artifact under one constitution."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from canon.core.artifact import Artifact, input_text
from canon.core.constitution import Constitution
from canon.core.prompt import JudgePrompt, render_prompt
from canon.core.rubric import Question
from canon.core.scoring import Answer


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """Everything a judge needs to answer one question."""

    question: Question
    artifact: Artifact
    constitution: Constitution
    instructions: str  # the rubric's standing instructions to the judge
    # 0 for the first ask; a confirmation re-ask counts up from 1. A variant presents the
    # choices in another order and a model judge samples it afresh, so a re-ask is an
    # independent look at the question rather than a replay of the first answer.
    variant: int = 0
    # How many requests about this artifact share this prompt's prefix (this one included);
    # a model judge marks the prefix for the provider's prompt cache only when it is > 1.
    prefix_shares: int = 1


def request_prompt(request: JudgeRequest) -> JudgePrompt:
    """The prompt a request puts to a model judge: the question about the artifact (the
    response it shows), with the request it answers and its context. Sending, caching,
    batching and estimating all render it here."""
    artifact = request.artifact
    return render_prompt(
        request.question,
        artifact.text,
        request.constitution,
        request.instructions,
        request.variant,
        request=None if artifact.input is None else input_text(artifact.input),
        context=artifact.context,
    )


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
