"""The judge protocol: one question about one artifact under one constitution; and the
protocol of a judge that answers every question about one response in one call."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from canon.core.artifact import Artifact, input_text
from canon.core.constitution import Constitution
from canon.core.prompt import JudgePrompt, render_prompt
from canon.core.rubric import Question
from canon.core.scoring import Answer
from canon.core.usage import Usage
from canon.errors import JudgeError


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


@dataclass(frozen=True, slots=True)
class ResponseAnswers:
    """What one call about one response answered: per request (by its index in the call),
    an answer or the error that leaves it unscored (``JudgeRefusedError``: refused)."""

    outcomes: Mapping[int, Answer | JudgeError]
    usage: Usage | None = field(default=None, compare=False)  # None: no call was made
    # The model the response says answered (a versioned id behind an alias), if it says.
    model: str | None = None


@runtime_checkable
class ResponseJudge(Judge, Protocol):
    """A judge that answers many questions about one response in one call (a decision
    model): every rubric question in every one of its fixed wordings."""

    @property
    def deterministic(self) -> bool:
        """Whether an identical request always gets the identical answer."""
        ...

    async def answer_all(self, requests: Sequence[JudgeRequest]) -> ResponseAnswers:
        """Answer every request in one call. The requests share one artifact (one response)
        and ask distinct (question, wording) pairs; ``request.variant`` is the wording."""
        ...


def is_deterministic(judge: Judge) -> bool:
    """Whether ``judge`` gives an identical request the identical answer every time (a
    decision model; an LLM judge that re-asks at temperature 0): asking it again the same
    way is then no new evidence. A wrapper that does not say (a budget) is what the judge
    inside it is; one that says (a cache) says what the judge inside says."""
    for current in wrapped(judge):
        said = getattr(current, "deterministic", None)
        if said is not None:
            return bool(said)
    return False


J = TypeVar("J")


def wrapped(judge: Judge) -> Iterator[Any]:
    """``judge``, then each judge it wraps (a cache, a budget: anything with ``inner``)."""
    current: Any = judge
    while current is not None:
        yield current
        current = getattr(current, "inner", None)


def inner_judge(judge: Judge, kind: type[J]) -> J | None:
    """The judge of ``kind`` behind any wrappers, or None when there is none."""
    return next((j for j in wrapped(judge) if isinstance(j, kind)), None)


def innermost(judge: Judge) -> Any:
    """The judge at the bottom of any wrappers: the one that answers."""
    *_, last = wrapped(judge)
    return last


def response_judge(judge: Judge) -> ResponseJudge | None:
    """``judge`` when it answers a whole response in one call, else None."""
    return judge if isinstance(judge, ResponseJudge) else None
