"""The fixed, versioned CDT rubric and the questions derived from a constitution."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from canon.core.constitution import Constitution
from canon.errors import RubricError, RubricOverrideError

QuestionKind = Literal["facet", "gate", "principle"]

RUBRIC_OVERRIDE_REFUSAL = (
    "Canon uses one fixed, versioned rubric and does not accept another. A coherence score "
    "means something only when every project answers the same questions: a rubric you can "
    "edit drifts toward whatever makes a bad run pass, and its scores stop being evidence "
    "or comparable with anyone else's (or your own from last quarter). What is yours is the "
    "constitution: Canon derives one question per principle from it. Remove the rubric "
    "setting and put what you want measured into your principles."
)

_SEMVER = re.compile(r"^\d+\.\d+\.\d+$")


@dataclass(frozen=True, slots=True)
class Choice:
    """One answer a judge may give; ``score`` is None for n/a."""

    label: str
    score: float | None
    meaning: str = ""


@dataclass(frozen=True, slots=True)
class Question:
    """One rubric question as asked about an artifact."""

    id: str
    kind: QuestionKind
    text: str
    choices: tuple[Choice, ...]
    subject: str | None = None  # the principle text, for derived questions
    principle: str | None = None  # the principle's own id, when the constitution gives one
    # Fixed alternate wordings of ``text`` (the rubric's own), for confirmation re-asks.
    wordings: tuple[str, ...] = ()
    # The rubric's own text when ``text`` puts the question in another wording (calibration).
    base_text: str | None = None
    # label (as given and case-folded) -> choice; built once, since scoring looks labels up
    # hundreds of thousands of times in a large run.
    _by_label: dict[str, Choice] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        table: dict[str, Choice] = {}
        for choice in self.choices:
            table[choice.label] = choice
            table[choice.label.strip().casefold()] = choice
        object.__setattr__(self, "_by_label", table)

    def choice(self, label: str) -> Choice | None:
        """The choice with this label (case-insensitive), or None."""
        found = self._by_label.get(label)
        return found if found is not None else self._by_label.get(label.strip().casefold())

    def wording(self, variant: int) -> str:
        """The question as re-ask ``variant`` words it: wording k mod n, 0 its own text."""
        if variant <= 0 or not self.wordings:
            return self.text
        index = variant % (len(self.wordings) + 1)
        return self.text if index == 0 else self.wordings[index - 1]

    @property
    def allows_na(self) -> bool:
        """Whether the judge may answer n/a to this question."""
        return any(c.score is None for c in self.choices)


@dataclass(frozen=True, slots=True)
class Rubric:
    """The rubric: fixed questions, the gate, and the per-principle template."""

    id: str
    version: str
    fingerprint: str
    instructions: str
    fixed: tuple[Question, ...]
    principle_prefix: str
    principle_text: str
    principle_choices: tuple[Choice, ...]
    principle_wordings: tuple[str, ...] = ()

    @property
    def gate(self) -> Question:
        """The NSCP gate question."""
        return next(q for q in self.fixed if q.kind == "gate")

    def questions_for(self, constitution: Constitution) -> tuple[Question, ...]:
        """Every question asked about an artifact: fixed ones, then one per principle."""
        derived = tuple(
            Question(
                id=f"{self.principle_prefix}{index}",
                kind="principle",
                text=self.principle_text.replace("{principle}", principle.text),
                choices=self.principle_choices,
                subject=principle.text,
                principle=principle.id,
                wordings=tuple(
                    w.replace("{principle}", principle.text) for w in self.principle_wordings
                ),
            )
            for index, principle in enumerate(constitution.principles, 1)
        )
        return self.fixed + derived


def refuse_rubric_override(where: str) -> RubricOverrideError:
    """The error raised wherever someone tries to supply their own rubric."""
    return RubricOverrideError(f"{where}: {RUBRIC_OVERRIDE_REFUSAL}")


def fingerprint_of(data: Mapping[str, object]) -> str:
    """A content fingerprint of parsed rubric data (independent of YAML formatting)."""
    canonical = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def rubric_from_mapping(data: object, *, source: str) -> Rubric:
    """Validate parsed rubric data into a Rubric."""
    if not isinstance(data, Mapping):
        raise RubricError(f"{source}: expected a mapping, got a {type(data).__name__}")
    version = _text(data, "version", source)
    if not _SEMVER.match(version):
        raise RubricError(f"{source}: version must look like 1.2.3, got {version!r}")
    fixed = tuple(_question(q, i, source) for i, q in enumerate(_list(data, "questions", source)))
    ids = [q.id for q in fixed]
    if len(set(ids)) != len(ids):
        raise RubricError(f"{source}: question ids repeat: {ids}")
    gates = [q for q in fixed if q.kind == "gate"]
    if len(gates) != 1:
        raise RubricError(f"{source}: expected exactly one gate question, found {len(gates)}")
    if gates[0].allows_na or not any(c.score == 0.0 for c in gates[0].choices):
        raise RubricError(
            f"{source}: the gate question needs a choice scored 0 (the contradiction) and no n/a"
        )
    template = data.get("principle_question")
    if not isinstance(template, Mapping):
        raise RubricError(f"{source}: 'principle_question' must be a mapping")
    text = _text(template, "text", source)
    if "{principle}" not in text:
        raise RubricError(f"{source}: principle_question.text must contain {{principle}}")
    return Rubric(
        id=_text(data, "id", source),
        version=version,
        fingerprint=fingerprint_of(data),
        instructions=_text(data, "instructions", source),
        fixed=fixed,
        principle_prefix=_text(template, "id_prefix", source),
        principle_text=text,
        principle_choices=_choices(template.get("choices"), f"{source}: principle_question"),
        principle_wordings=_wordings(template, f"{source}: principle_question", "{principle}"),
    )


def _question(raw: object, index: int, source: str) -> Question:
    where = f"{source}: question {index + 1}"
    if not isinstance(raw, Mapping):
        raise RubricError(f"{where}: expected a mapping")
    kind = _text(raw, "kind", where)
    if kind not in ("facet", "gate"):
        raise RubricError(f"{where}: kind must be 'facet' or 'gate', got {kind!r}")
    return Question(
        id=_text(raw, "id", where),
        kind="gate" if kind == "gate" else "facet",
        text=_text(raw, "text", where),
        choices=_choices(raw.get("choices"), where),
        wordings=_wordings(raw, where),
    )


def _wordings(raw: Mapping[str, object], where: str, placeholder: str = "") -> tuple[str, ...]:
    """A question's alternate wordings: optional, each non-empty text, none repeated."""
    value = raw.get("wordings")
    if value is None:
        return ()
    if not isinstance(value, list) or not value:
        raise RubricError(f"{where}: 'wordings' must be a non-empty list of texts")
    found: list[str] = []
    for index, item in enumerate(value, 1):
        if not isinstance(item, str) or not item.strip():
            raise RubricError(f"{where}: wording {index} must be non-empty text")
        if placeholder and placeholder not in item:
            raise RubricError(f"{where}: wording {index} must contain {placeholder}")
        found.append(item.strip())
    if len(set(found)) != len(found) or _text(raw, "text", where) in found:
        raise RubricError(f"{where}: 'wordings' repeat a wording or the question's own text")
    return tuple(found)


def _choices(raw: object, where: str) -> tuple[Choice, ...]:
    if not isinstance(raw, Sequence) or isinstance(raw, str) or len(raw) < 2:
        raise RubricError(f"{where}: choices must be a list of at least two choices")
    choices: list[Choice] = []
    for item in raw:
        if not isinstance(item, Mapping) or not isinstance(item.get("label"), str):
            raise RubricError(f"{where}: each choice needs a text 'label'")
        score = item.get("score")
        if score is not None and (
            isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1
        ):
            raise RubricError(f"{where}: choice {item['label']!r} score must be in [0, 1] or null")
        meaning = item.get("meaning", "")
        choices.append(
            Choice(
                label=item["label"],
                score=None if score is None else float(score),
                meaning=str(meaning),
            )
        )
    labels = [c.label.casefold() for c in choices]
    if len(set(labels)) != len(labels):
        raise RubricError(f"{where}: choice labels repeat: {labels}")
    return tuple(choices)


def _text(data: Mapping[str, object], key: str, where: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise RubricError(f"{where}: {key!r} must be non-empty text")
    return value.strip()


def _list(data: Mapping[str, object], key: str, where: str) -> list[object]:
    value = data.get(key)
    if not isinstance(value, list) or not value:
        raise RubricError(f"{where}: {key!r} must be a non-empty list")
    return value
