"""Every decision answer is checked before it counts; a bad one is a coded problem.

A wire reads its response into, per asked id, either an ``Answer`` (the distribution over
the question's labels, renormalised to sum 1) or an ``AnswerProblem``: no answer, more than
one, the wrong type, option keys not exactly as offered, a probability that is not a finite
number in [0, 1], a sum off 1 by more than the wire's rounding allows, a ``choice`` that is
not the most probable option, a malformed field, or a refusal. A problem leaves that
question unscored (a refusal: refused): never a pass, never evidence of a regression.

An envelope Canon cannot read at all (not JSON, no answers, no model, no usage) raises
``Unreadable``: the client retries it as any unreadable reply.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from canon.core.scoring import Answer
from canon.core.usage import Usage
from canon.errors import JudgeError, JudgeRefusedError
from canon.judge.decisions.asking import AskedQuestion

# The least tolerance on a distribution's sum: hosted answers are rounded to two decimals,
# and sums of 0.99 occur (SPEC tolerance |sum - 1| <= max(0.05, n * r)).
SUM_TOLERANCE = 0.05


class ProblemKind(enum.Enum):
    """Why an asked question has no usable answer."""

    MISSING = "missing"  # the response has no answer for this id
    EXTRA = "extra"  # more than one answer for it, or answers to ids nobody asked
    WRONG_TYPE = "wrong_type"  # not a choice answer
    KEYS = "keys"  # option keys not exactly the offered labels
    PROBABILITY = "probability"  # a probability that is not a finite number in [0, 1]
    SUM = "sum"  # probabilities that do not sum to 1 within the wire's rounding
    CHOICE = "choice"  # ``choice`` missing, or not the most probable option
    MALFORMED = "malformed"  # another field of the answer is not what the wire says
    REFUSED = "refused"  # the server declined to answer this question


@dataclass(frozen=True, slots=True)
class AnswerProblem:
    """An asked question the response leaves without a usable answer."""

    kind: ProblemKind
    detail: str

    def as_error(self, judge: str) -> JudgeError:
        """The error a per-question judge raises for this outcome, so a caller files it as
        it files theirs: a refusal is ``JudgeRefusedError`` (a refused cell), any other
        problem a ``JudgeError`` (an unscored cell)."""
        kind = JudgeRefusedError if self.kind is ProblemKind.REFUSED else JudgeError
        return kind(f"judge {judge}: {self.detail} ({self.kind.value})")


Outcome = Answer | AnswerProblem


class Unreadable(Exception):
    """The response body is not the wire's envelope: retried like any unreadable reply."""


@dataclass(frozen=True, slots=True)
class WireReply:
    """What one decision response says, read and checked."""

    model: str  # the model the response names (the versioned id behind an alias)
    outcomes: Mapping[str, Outcome]  # per asked id
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True, slots=True)
class DecisionResult:
    """The result of one decision call: per asked id an answer or a problem."""

    model: str  # the answering model, as the response names it
    requested: str  # the model the call asked for (maybe an alias)
    outcomes: Mapping[str, Outcome]
    usage: Usage = field(default_factory=Usage)

    def answers(self) -> dict[str, Answer]:
        """The asked ids that have a usable answer."""
        return {key: o for key, o in self.outcomes.items() if isinstance(o, Answer)}

    def problems(self) -> dict[str, AnswerProblem]:
        """The asked ids left unscored (or refused), with why."""
        return {key: o for key, o in self.outcomes.items() if isinstance(o, AnswerProblem)}


class Pairs(dict[str, Any]):
    """A JSON object that remembers the keys it gave more than once (JSON allows it; a
    plain dict would keep the last silently)."""

    repeated: frozenset[str] = frozenset()


def _object(pairs: list[tuple[str, Any]]) -> Pairs:
    found = Pairs(pairs)
    if len(found) != len(pairs):
        keys = [key for key, _ in pairs]
        found.repeated = frozenset(key for key in keys if keys.count(key) > 1)
    return found


def repeated(value: object) -> frozenset[str]:
    """The keys a parsed JSON object gave more than once."""
    return value.repeated if isinstance(value, Pairs) else frozenset()


def parse_body(content: bytes) -> Mapping[str, Any]:
    """A response body as a JSON object; NaN, Infinity and non-objects are unreadable."""
    try:
        data = json.loads(
            content.decode("utf-8"), parse_constant=_no_constant, object_pairs_hook=_object
        )
    except (UnicodeDecodeError, ValueError) as exc:
        raise Unreadable(f"the body is not JSON ({_short(str(exc))})") from exc
    if not isinstance(data, dict):
        raise Unreadable(f"the body is a JSON {type(data).__name__}, not an object")
    return data


def envelope(data: Mapping[str, Any]) -> tuple[str, int, int]:
    """The envelope's answering ``model`` and its usage (input, output tokens)."""
    model = data.get("model")
    if not isinstance(model, str) or not model.strip():
        raise Unreadable("the response names no model")
    usage = data.get("usage")
    if not isinstance(usage, Mapping):
        raise Unreadable("the response has no usage")
    counts = [usage.get(name, 0 if name == "output_tokens" else None) for name in _TOKENS]
    for name, count in zip(_TOKENS, counts, strict=True):
        if not _whole(count):
            raise Unreadable(f"usage.{name} is {count!r}, not a whole number of tokens")
    return model, int(counts[0]), int(counts[1])


_TOKENS = ("input_tokens", "output_tokens")


def check_choice(
    asked: AskedQuestion,
    answer: Mapping[str, Any],
    probabilities: Sequence[tuple[object, object]],
    rounding: float,
) -> Outcome:
    """One choice answer, checked against the options offered: an Answer or a problem.

    ``probabilities`` are the answer's (option key, probability) pairs in the wire's order;
    ``rounding`` is the wire's rounding unit (0.01 for two decimals).
    """
    if answer.get("type") != "choice":
        return AnswerProblem(ProblemKind.WRONG_TYPE, f"a {answer.get('type')!r} answer")
    keys = [key for key, _ in probabilities]
    offered = asked.labels
    if len(set(map(repr, keys))) != len(keys) or set(map(repr, keys)) != set(map(repr, offered)):
        return AnswerProblem(
            ProblemKind.KEYS, f"probabilities keyed {keys!r}, offered {list(offered)!r}"
        )
    values: dict[str, float] = {}
    for key, value in probabilities:
        if not _fraction(value):
            return AnswerProblem(
                ProblemKind.PROBABILITY, f"P({key}) is {value!r}, not a number in [0, 1]"
            )
        values[str(key)] = float(value)  # type: ignore[arg-type]
    total = math.fsum(values.values())
    if abs(total - 1.0) > max(SUM_TOLERANCE, len(values) * rounding):
        return AnswerProblem(ProblemKind.SUM, f"the probabilities sum to {total:.4g}, not 1")
    choice = answer.get("choice")
    if not isinstance(choice, str) or choice not in values:
        return AnswerProblem(ProblemKind.CHOICE, f"choice {choice!r} is not an offered option")
    if values[choice] < max(values.values()):
        return AnswerProblem(
            ProblemKind.CHOICE, f"choice {choice!r} is not the most probable option"
        )
    confidence = answer.get("confidence")
    if confidence is not None and not _fraction(confidence):
        return AnswerProblem(
            ProblemKind.MALFORMED, f"confidence is {confidence!r}, not a number in [0, 1]"
        )
    # Canon's own confidence comes from the distribution (canon.core.scoring), never from
    # the server's: servers define ``confidence`` in several incompatible ways.
    return Answer({label: values[label] / total for label in offered})


def match_answers(
    asked: Sequence[AskedQuestion],
    found: Mapping[str, Sequence[object]],
    strays: Sequence[str],
    check: Callable[[AskedQuestion, object], Outcome],
) -> dict[str, Outcome]:
    """Per asked id: its one answer, checked; or missing, or extra when it has several.

    ``found`` lists the answers given under each id, ``strays`` the ids answered that nobody
    asked. A stray means the server did not keep the ids it was given, so none of its answers
    can be trusted to belong to the question they name: every question is left unscored.
    """
    if strays:
        detail = f"the response also answers {sorted(strays)!r}, which were not asked"
        return {item.id: AnswerProblem(ProblemKind.EXTRA, detail) for item in asked}
    outcomes: dict[str, Outcome] = {}
    for item in asked:
        given = found.get(item.id, ())
        if not given:
            outcomes[item.id] = AnswerProblem(ProblemKind.MISSING, f"no answer for {item.id!r}")
        elif len(given) > 1:
            outcomes[item.id] = AnswerProblem(
                ProblemKind.EXTRA, f"more than one answer for {item.id!r}"
            )
        else:
            outcomes[item.id] = check(item, given[0])
    return outcomes


def _fraction(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0.0 <= value <= 1.0
    )


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _short(text: str) -> str:
    return text if len(text) <= 120 else text[:119] + "…"
