"""A decision model as Canon's judge: one call per response carries every question.

``DecisionJudge`` is both kinds of judge. As a ``ResponseJudge`` (``answer_all``) it asks,
in one call about one response, every rubric question in every one of its fixed wordings:
the runner's first pass. As a plain ``Judge`` (``answer``) it asks one question in one
wording, for the commands that ask a question at a time. Either way every answer is
checked (canon.judge.decisions.validate) before it counts: a bad one leaves its question
unscored, a refused one refused, never a pass.

A decision model is deterministic: the identical request gets the identical answer, so
asking it again the same way is no evidence (canon.judge.base.is_deterministic). It gives
no reason; its answer is the probabilities.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from typing import Any

from canon.core.artifact import Artifact
from canon.core.constitution import Constitution, Principle
from canon.core.rubric import Choice, Question
from canon.core.scoring import Answer
from canon.core.usage import Usage
from canon.errors import JudgeError
from canon.judge.base import JudgeRequest, ResponseAnswers
from canon.judge.decisions.asking import asked_question, compact, decision_state
from canon.judge.decisions.client import DecisionClient
from canon.judge.decisions.validate import AnswerProblem
from canon.judge.decisions.wires import Wire
from canon.judge.usage import CallGuard


class DecisionJudge:
    """A decision model on one of the wires of canon.judge.decisions.wires."""

    deterministic = True

    def __init__(
        self,
        wire: str,
        model: str,
        *,
        api_key: str | None = None,
        api_base: str | None = None,
        timeout: float = 10.0,
        max_attempts: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 20.0,
    ) -> None:
        self.client = DecisionClient(
            wire,
            model,
            api_key=api_key,
            root=api_base,
            timeout=timeout,
            max_attempts=max_attempts,
            backoff=backoff,
            max_backoff=max_backoff,
        )
        # Set by a budget (canon.check.spend): asked before every call.
        self.spend_guard: CallGuard | None = None
        # The models the responses said answered, in the order first seen (an alias names
        # the versioned model behind it here).
        self.answered_by: dict[str, None] = {}
        self._asking: str | None = None  # asking_digest, once (the estimate asks per request)

    @property
    def name(self) -> str:
        """``wire:model`` as configured, as recorded in baselines."""
        return self.client.name

    @property
    def model(self) -> str:
        """The model asked for (maybe an alias)."""
        return self.client.model

    @property
    def alias(self) -> bool:
        """Whether the model asked for moves with releases (``jev-latest``)."""
        return self.client.alias

    def __repr__(self) -> str:
        return f"DecisionJudge({self.name!r})"

    def cache_identity(self) -> dict[str, Any]:
        """What determines the answers besides the request: the wire, model and endpoint,
        and how a call asks (the cache keys an answer by the question as the rubric words
        it, not by the call's own text)."""
        if self._asking is None:
            self._asking = asking_digest(self.client.wire)
        return {
            "decision_wire": self.client.wire.name,
            "model": self.model,
            "url": self.client.url,
            "asking": self._asking,
        }

    async def answer(self, request: JudgeRequest) -> Answer:
        """One question in one wording (``request.variant``), in a call of its own."""
        answers = await self.answer_all([request])
        outcome = answers.outcomes[0]
        if isinstance(outcome, JudgeError):
            outcome.usage = answers.usage
            raise outcome
        # The call was this question's alone: its usage is the answer's, as an LLM judge's is.
        return dataclasses.replace(outcome, usage=answers.usage)

    async def answer_all(self, requests: Sequence[JudgeRequest]) -> ResponseAnswers:
        """Every request (one response's questions and wordings) in one call."""
        if not requests:
            return ResponseAnswers({})
        first = requests[0]
        state = decision_state(first.constitution, first.artifact)
        asked = [asked_question(r.question, r.variant, state) for r in requests]
        try:
            result = await self.client.decide(state, asked, self.spend_guard)
        except JudgeError as exc:
            if exc.usage is None:
                exc.usage = Usage(calls=0, cost=0.0)
            raise
        self.answered_by.setdefault(result.model, None)
        outcomes: dict[int, Answer | JudgeError] = {}
        for index, item in enumerate(asked):
            outcome = result.outcomes[item.id]
            outcomes[index] = (
                outcome.as_error(self.name) if isinstance(outcome, AnswerProblem) else outcome
            )
        return ResponseAnswers(outcomes, result.usage, result.model)


def asking_digest(wire: Wire) -> str:
    """A digest of how ``wire`` asks: a probe principle about a probe artifact with a request
    and context, built as a call sends it. A change to the state's task, the pointer that
    begins every question or the body's shape changes it, so answers cached before the
    change are asked again rather than mixed with answers to the new asking."""
    principle = Principle("Be kind.")
    state = decision_state(
        Constitution("Help.", (principle,)), Artifact("Hi.", input="Hello?", context=("c",))
    )
    question = Question(
        "P1",
        "principle",
        'Does the artifact honour "Be kind."?',
        (Choice("yes", 1.0, "fully"), Choice("n/a", None, "it does not apply")),
        subject=principle.text,
        wordings=('Is "Be kind." honoured?',),
    )
    asked = [asked_question(question, variant, state) for variant in (0, 1)]
    probe = compact(wire.build("probe", state, asked))
    return hashlib.sha256(probe.encode("utf-8")).hexdigest()[:16]
