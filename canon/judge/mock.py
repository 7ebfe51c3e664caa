"""MockJudge: answers rubric questions from a script, for tests, offline demos and replays."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from canon.core.rubric import Question
from canon.core.scoring import Answer
from canon.errors import JudgeRefusedError, JudgeScriptError, UsageError
from canon.judge.base import JudgeRequest

DEFAULT_KEY = "__default__"
# The script key whose value keys answers by artifact id, then by question (a replay).
BY_ARTIFACT_KEY = "by_artifact"
# The fields of a reasoned reply ({"answer": "no", "reason": "..."}) and of a refusal.
ANSWER_FIELD, REASON_FIELD, REFUSAL_FIELD = "answer", "reason", "refusal"

Reply: TypeAlias = str | Mapping[str, Any]
Script: TypeAlias = Mapping[str, Any] | Callable[[Question, str], Reply]


class MockJudge:
    """A judge that answers from a script: question-substring → reply, or a callable.

    A dict key matches a question when it equals the question's id (``G``, ``P1`` …) or is
    a case-insensitive substring of its text; ids are tried first, then keys in order.
    ``by_artifact`` maps an artifact id to such a mapping, tried first for that artifact
    (recorded judgments replay exactly). ``__default__`` answers anything else, but only
    when given: an unmatched question raises, so a mis-scripted test fails instead of
    silently skipping facets. A reply is a choice label, a mapping label → probability
    mass, ``{"answer": label, "reason": text}``, or ``{"refusal": text}`` (the judge
    refuses to judge).
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
            _check_by_artifact(script.get(BY_ARTIFACT_KEY))
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
                reply = self._reply_for(request)
            return _answer(question, reply)
        except (JudgeScriptError, JudgeRefusedError) as exc:
            if self._source is None or isinstance(exc, JudgeRefusedError):
                raise
            raise JudgeScriptError(f"{self._source}: {exc}") from None

    def _reply_for(self, request: JudgeRequest) -> Reply:
        assert isinstance(self._script, Mapping)  # callables are answered by the caller
        question = request.question
        recorded = self._script.get(BY_ARTIFACT_KEY)
        key = request.artifact.key
        if isinstance(recorded, Mapping) and isinstance(recorded.get(key), Mapping):
            entry = recorded[key]
            found = _match(entry, question)
            if found is None and DEFAULT_KEY in entry:
                found = entry[DEFAULT_KEY]
            if found is not None:
                return found
        rest = {k: v for k, v in self._script.items() if k != BY_ARTIFACT_KEY}
        found = _match(rest, question)
        if found is not None:
            return found
        if DEFAULT_KEY in rest:
            return rest[DEFAULT_KEY]  # type: ignore[no-any-return]
        where = f" for artifact {key}" if isinstance(recorded, Mapping) else ""
        raise JudgeScriptError(
            f"MockJudge has no answer{where} for question {question.id} ({question.text!r}); "
            f"add a key that matches it, or an explicit {DEFAULT_KEY!r} entry"
        )


def _match(script: Mapping[str, Any], question: Question) -> Reply | None:
    """The reply a mapping gives a question by id, principle id or text; None if none."""
    if question.id in script:
        return script[question.id]  # type: ignore[no-any-return]
    if question.principle is not None and question.principle in script:
        return script[question.principle]  # type: ignore[no-any-return]
    # The rubric's own text, however the question is put (calibration rewords it): a
    # script answers a question, not one phrasing of it.
    text = (question.base_text or question.text).casefold()
    for key, reply in script.items():
        if key != DEFAULT_KEY and key.casefold() in text:
            return reply  # type: ignore[no-any-return]
    return None


def _check_by_artifact(recorded: object) -> None:
    if recorded is None:
        return
    if not isinstance(recorded, Mapping) or not all(
        isinstance(k, str) and isinstance(v, Mapping) for k, v in recorded.items()
    ):
        raise UsageError(
            f"MockJudge {BY_ARTIFACT_KEY} must map artifact ids to mappings of question → "
            f"answer, got {recorded!r:.120}"
        )


def _answer(question: Question, reply: object) -> Answer:
    """A scripted reply as an answer: its distribution and, when given, its reason."""
    reason: str | None = None
    if isinstance(reply, Mapping) and REFUSAL_FIELD in reply:
        refusal = reply[REFUSAL_FIELD]
        raise JudgeRefusedError(
            f"question {question.id}: the judge refused to judge: "
            f"{refusal if isinstance(refusal, str) and refusal.strip() else 'no reason given'}"
        )
    if isinstance(reply, Mapping) and ANSWER_FIELD in reply:
        extra = sorted(set(map(str, reply)) - {ANSWER_FIELD, REASON_FIELD})
        reason = reply.get(REASON_FIELD)
        if extra or not (reason is None or isinstance(reason, str)):
            raise JudgeScriptError(
                f"MockJudge reply for question {question.id}: a reasoned reply is "
                f'{{"answer": <label>, "reason": <text>}}, got {dict(reply)!r:.160}'
            )
        reply = reply[ANSWER_FIELD]
    return Answer(distribution=_distribution(question, reply), rationale=reason)


def _distribution(question: Question, reply: object) -> dict[str, float]:
    if isinstance(reply, str):
        reply = {reply: 1.0}
    if not isinstance(reply, Mapping):
        raise JudgeScriptError(
            f"MockJudge reply for question {question.id} must be a choice label, a "
            "mapping of labels to probabilities, or {answer, reason}, got a "
            f"{type(reply).__name__}"
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
