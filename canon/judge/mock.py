"""MockJudge: answers rubric questions from a script, for tests and offline demos."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeAlias

from canon.core.rubric import Question
from canon.core.scoring import Answer
from canon.errors import JudgeScriptError, UsageError
from canon.judge.base import JudgeRequest

DEFAULT_KEY = "__default__"

Reply: TypeAlias = str | Mapping[str, float]
Script: TypeAlias = Mapping[str, Reply] | Callable[[Question, str], Reply]


class MockJudge:
    """A judge that answers from a script: question-substring → choice, or a callable.

    A dict key matches a question when it equals the question's id (``G``, ``P1`` …) or is
    a case-insensitive substring of its text; ids are tried first, then keys in order.
    ``__default__`` answers anything else, but only when given: an unmatched question
    raises, so a mis-scripted test fails instead of silently skipping facets.
    A reply is a choice label, or a mapping label → probability mass.
    """

    def __init__(self, script: Script, *, name: str = "mock", source: str | None = None) -> None:
        if not callable(script) and not isinstance(script, Mapping):
            raise UsageError(
                f"MockJudge script must be a dict or a callable, got a {type(script).__name__}"
            )
        if isinstance(script, Mapping):
            bad = [k for k in script if not isinstance(k, str) or not k.strip()]
            if bad:
                raise UsageError(f"MockJudge script keys must be non-empty text, got {bad!r}")
        self._script = script
        self._name = name
        self._source = source  # the script file, named in errors about a scripted reply
        self.calls = 0  # how many questions it was asked; tests use it to prove a gate saved calls

    @property
    def name(self) -> str:
        """The judge's name as recorded in results."""
        return self._name

    async def answer(self, request: JudgeRequest) -> Answer:
        """Answer from the script, or raise JudgeScriptError naming the question."""
        self.calls += 1
        question = request.question
        try:
            if callable(self._script):
                reply = self._script(question, request.artifact.text)
            else:
                reply = self._lookup(self._script, question)
            return Answer(distribution=_distribution(question, reply))
        except JudgeScriptError as exc:
            if self._source is None:
                raise
            raise JudgeScriptError(f"{self._source}: {exc}") from None

    @staticmethod
    def _lookup(script: Mapping[str, Reply], question: Question) -> Reply:
        if question.id in script:
            return script[question.id]
        if question.principle is not None and question.principle in script:
            return script[question.principle]
        text = question.text.casefold()
        for key, reply in script.items():
            if key != DEFAULT_KEY and key.casefold() in text:
                return reply
        if DEFAULT_KEY in script:
            return script[DEFAULT_KEY]
        raise JudgeScriptError(
            f"MockJudge has no answer for question {question.id} ({question.text!r}); "
            f"add a key that matches it, or an explicit {DEFAULT_KEY!r} entry"
        )


def _distribution(question: Question, reply: object) -> dict[str, float]:
    if isinstance(reply, str):
        reply = {reply: 1.0}
    if not isinstance(reply, Mapping):
        raise JudgeScriptError(
            f"MockJudge reply for question {question.id} must be a choice label or a "
            f"mapping of labels to probabilities, got a {type(reply).__name__}"
        )
    distribution: dict[str, float] = {}
    for label, mass in reply.items():
        choice = question.choice(str(label))
        if choice is None:
            allowed = ", ".join(c.label for c in question.choices)
            raise JudgeScriptError(
                f"MockJudge answered {label!r} to question {question.id}, "
                f"which offers only: {allowed}"
            )
        distribution[choice.label] = mass
    return distribution
