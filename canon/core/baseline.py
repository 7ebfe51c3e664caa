"""Baselines: an accepted run recorded per artifact key, and its plain-data form."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from canon.core.rubric import Question, Rubric
from canon.core.scoring import ArtifactResult, CellState
from canon.errors import BaselineError

BASELINE_FORMAT = 8
LEGACY_FORMAT = 1  # overall score and gate per artifact only; no per-question rows
# Format 2 has per-question rows without the answer distribution or the number of asks;
# format 3 has no text digest (its texts are "unknown": never treated as unchanged);
# format 4 has no input digest (its artifacts answered no recorded request).
READABLE_FORMATS = (1, 2, 3, 4, 5, 6, 7, 8)
INPUT_FORMAT = 5  # from here a record may hold the digest of the request it answered
ANSWERED_FORMAT = 6  # from here a baseline may name the models that answered (decision judges)
# From here a baseline may say whether its model judge read the answers' log-probabilities.
READING_FORMAT = 7
# From here it may also say how many answers its model judge asked for an ask (``samples``).
SAMPLES_FORMAT = 8
SETTLED_FORMAT = 4  # from here accept asks every question twice before recording it

_STATES: frozenset[str] = frozenset({"answered", "na", "unscored", "refused"})
_STOPPERS: frozenset[str] = frozenset({"policy", "contract"})
_TOP_KEYS = frozenset({"format", "rubric", "judge", "constitution", "threshold", "artifacts"})
# Written only when the judge's responses named the model that answered (format 6).
_OPTIONAL_TOP_KEYS = frozenset({"answered_by"})
_READING_KEYS = frozenset({"logprobs"})  # format 7: written for a model judge
_SAMPLES_KEYS = frozenset({"samples"})  # format 8: written for a model judge
_RECORD_KEYS = frozenset({"score", "gated", "canon", "stopped_by", "questions"})
_RECORD_KEYS_4 = _RECORD_KEYS | {"digest"}
# Written only for an artifact judged over several responses (repeated agent runs).
_OPTIONAL_RECORD_KEYS = frozenset({"replicates"})
# Written only for an artifact that answers a recorded request (format 5).
_INPUT_RECORD_KEYS = frozenset({"input"})
_LEGACY_RECORD_KEYS = frozenset({"score", "gated"})
_QUESTION_KEYS = frozenset({"score", "confidence", "state", "subject"})
_QUESTION_KEYS_3 = _QUESTION_KEYS | {"distribution", "asks", "principle"}


class QuestionRecord(NamedTuple):
    """One question's recorded outcome for one artifact.

    A NamedTuple, like ``Cell``: a large baseline holds hundreds of thousands of these.
    """

    score: float | None
    confidence: float | None
    state: CellState
    subject: str | None = None  # the principle text, for derived questions
    # The pooled answer over every ask (the first one and any confirmation re-asks), and
    # how many asks that was; absent in format 2.
    distribution: tuple[tuple[str, float], ...] | None = None
    asks: int | None = None
    principle: str | None = None  # the principle's id, when the constitution gave one


@dataclass(frozen=True, slots=True)
class ArtifactRecord:
    """What a baseline remembers about one artifact."""

    score: float | None
    gated: bool
    canon: bool | None = None  # None in the legacy format, which did not record it
    stopped_by: str | None = None  # "policy" or "contract" when a gate stopped it
    questions: Mapping[str, QuestionRecord] | None = None  # None in the legacy format
    digest: str | None = None  # the text's digest (format 4); None: the text is unknown
    # How many responses of the artifact its answers pooled; None for one response.
    replicates: int | None = None
    # The digest of the request the artifact answered (format 5); None: it had no input.
    input: str | None = None


@dataclass(frozen=True, slots=True)
class Baseline:
    """An accepted run: the rubric, judge and constitution it used, and every artifact."""

    format: int
    rubric_id: str
    rubric_version: str
    rubric_fingerprint: str | None  # the legacy format may lack it
    judge: str | None
    constitution: str | None
    threshold: float | None
    artifacts: Mapping[str, ArtifactRecord]
    # The models the judge's responses said answered (a decision judge names the versioned
    # model behind its name); None when the judge does not say.
    answered_by: tuple[str, ...] | None = None
    # Whether a model judge read its answers from log-probabilities (True) or labels alone
    # (False); None when the baseline does not say (a scripted or decision judge, or a
    # baseline older than format 7, when model judges read labels unless told otherwise).
    logprobs: bool | None = None
    # How many answers the model judge asked for an ask (one, or several at a temperature
    # whose shares are the distribution); None when the baseline does not say (a scripted or
    # decision judge, or a baseline older than format 8, when it was one unless set).
    samples: int | None = None

    @property
    def legacy(self) -> bool:
        """Whether this baseline predates per-question rows (Layer 1 cannot run)."""
        return self.format == LEGACY_FORMAT


def record_for(baseline: Baseline, key: str, input_digest: str | None) -> ArtifactRecord | None:
    """The record an artifact is compared with: its key's, when it answered the same input
    (request); None for a new artifact or one that now answers another request."""
    record = baseline.artifacts.get(key)
    if record is None or record.input != input_digest:
        return None
    return record


def baseline_from_results(
    results: Sequence[ArtifactResult],
    *,
    rubric: Rubric,
    judge: str,
    constitution: str,
    threshold: float,
    asks: Mapping[tuple[str, str], int] | None = None,
    replicates: Mapping[str, int] | None = None,
    inputs: Mapping[str, str] | None = None,
    answered_by: Sequence[str] = (),
    logprobs: bool | None = None,
    samples: int | None = None,
) -> Baseline:
    """Record a run as a baseline in the current format.

    ``asks`` says how many answers each (artifact, question) cell pooled; one by default.
    ``replicates`` says how many responses an artifact's first answers pooled; one by default.
    ``inputs`` gives the digest of each artifact's input (the request it answered).
    ``answered_by`` names the models the judge's responses said answered, if any;
    ``logprobs`` whether a model judge read its answers from log-probabilities, ``samples``
    how many answers it asked for an ask.
    """
    artifacts: dict[str, ArtifactRecord] = {}
    for result in results:
        count = (replicates or {}).get(result.key, 1)
        questions = {
            cell.id: QuestionRecord(
                cell.score,
                cell.confidence,
                cell.state,
                cell.question.subject,
                tuple((label, round(mass, 6)) for label, mass in cell.distribution) or None,
                (asks or {}).get((result.key, cell.id), 1) + count - 1
                if cell.state != "unscored"
                else 0,
                cell.question.principle,
            )
            for cell in result.cells
        }
        artifacts[result.key] = ArtifactRecord(
            score=result.score,
            gated=result.gated,
            canon=result.canon,
            stopped_by=result.stopped_by,
            questions=questions,
            digest=result.digest,
            replicates=count if count > 1 and result.cells else None,
            input=(inputs or {}).get(result.key),
        )
    return Baseline(
        format=BASELINE_FORMAT,
        rubric_id=rubric.id,
        rubric_version=rubric.version,
        rubric_fingerprint=rubric.fingerprint,
        judge=judge,
        constitution=constitution,
        threshold=threshold,
        artifacts=artifacts,
        answered_by=tuple(sorted(set(answered_by))) or None,
        logprobs=logprobs,
        samples=samples,
    )


def baseline_to_data(baseline: Baseline) -> dict[str, Any]:
    """A baseline as plain data, ready for deterministic JSON (no timestamps)."""
    rubric: dict[str, Any] = {"id": baseline.rubric_id, "version": baseline.rubric_version}
    if baseline.rubric_fingerprint is not None:
        rubric["fingerprint"] = baseline.rubric_fingerprint
    data: dict[str, Any] = {
        "format": baseline.format,
        "rubric": rubric,
        "judge": baseline.judge,
    }
    if baseline.answered_by is not None:
        data["answered_by"] = list(baseline.answered_by)
    if baseline.logprobs is not None:
        data["logprobs"] = baseline.logprobs
    if baseline.samples is not None:
        data["samples"] = baseline.samples
    data["constitution"] = baseline.constitution
    data["threshold"] = baseline.threshold
    data["artifacts"] = {key: _record_data(r) for key, r in baseline.artifacts.items()}
    return data


def _record_data(record: ArtifactRecord) -> dict[str, Any]:
    data: dict[str, Any] = {"score": record.score, "gated": record.gated}
    if record.questions is None:
        return data
    data["canon"] = record.canon
    data["stopped_by"] = record.stopped_by
    data["questions"] = {qid: _question_data(q) for qid, q in record.questions.items()}
    if record.digest is not None:
        data["digest"] = record.digest
    if record.replicates is not None:
        data["replicates"] = record.replicates
    if record.input is not None:
        data["input"] = record.input
    return data


def _question_data(question: QuestionRecord) -> dict[str, Any]:
    data: dict[str, Any] = {
        "score": question.score,
        "confidence": question.confidence,
        "state": question.state,
    }
    if question.subject is not None:
        data["subject"] = question.subject
    if question.distribution is not None:
        data["distribution"] = dict(question.distribution)
    if question.asks is not None:
        data["asks"] = question.asks
    if question.principle is not None:
        data["principle"] = question.principle
    return data


def baseline_from_data(data: object, *, source: str) -> Baseline:
    """Validate parsed baseline JSON (formats 1 to 5); BaselineError names what is wrong."""
    if not isinstance(data, Mapping):
        raise BaselineError(f"{source}: a baseline is a JSON object, got {_kind(data)}")
    version = data.get("format")
    if isinstance(version, int) and not isinstance(version, bool) and version > BASELINE_FORMAT:
        # Re-accepting here would overwrite what the newer Canon recorded: say upgrade.
        raise BaselineError(
            f"{source}: written by a newer Canon (baseline format {version}); this Canon "
            f"reads formats {', '.join(map(str, READABLE_FORMATS))}: upgrade canon-testing "
            "to read it (do not re-accept with this version: that would replace it)"
        )
    if version not in READABLE_FORMATS or isinstance(version, bool):
        raise BaselineError(
            f"{source}: unknown baseline format {version!r}; this Canon reads formats "
            f'{", ".join(map(str, READABLE_FORMATS))}. Run "canon accept" to record a new one'
        )
    legacy = version == LEGACY_FORMAT
    known = _TOP_KEYS | (_OPTIONAL_TOP_KEYS if version >= ANSWERED_FORMAT else frozenset())
    known |= _READING_KEYS if version >= READING_FORMAT else frozenset()
    known |= _SAMPLES_KEYS if version >= SAMPLES_FORMAT else frozenset()
    unknown = sorted(str(k) for k in data if k not in known)
    if unknown:
        raise BaselineError(f"{source}: unknown key(s) {', '.join(map(repr, unknown))}")
    required = ("rubric", "artifacts") if legacy else tuple(sorted(_TOP_KEYS))
    missing = [k for k in required if k not in data]
    if missing:
        raise BaselineError(f"{source}: missing key(s) {', '.join(map(repr, missing))}")
    rubric = data["rubric"]
    if not isinstance(rubric, Mapping):
        raise BaselineError(f"{source}: 'rubric' must be an object, got {_kind(rubric)}")
    fingerprint = rubric.get("fingerprint")
    if fingerprint is not None or not legacy:
        fingerprint = _text(fingerprint, f"{source}: rubric.fingerprint")
    threshold = data.get("threshold")
    if threshold is not None or not legacy:
        threshold = _fraction(threshold, f"{source}: 'threshold'")
    records = data["artifacts"]
    if not isinstance(records, Mapping):
        raise BaselineError(f"{source}: 'artifacts' must be an object keyed by artifact key")

    def read(value: object, where: str) -> ArtifactRecord:
        return _legacy_record(value, where) if legacy else _record(value, where, version)

    return Baseline(
        format=int(version),
        rubric_id=_text(rubric.get("id"), f"{source}: rubric.id"),
        rubric_version=_text(rubric.get("version"), f"{source}: rubric.version"),
        rubric_fingerprint=fingerprint,
        judge=_optional_text(data.get("judge"), f"{source}: 'judge'"),
        constitution=_optional_text(data.get("constitution"), f"{source}: 'constitution'"),
        threshold=threshold,
        artifacts={
            _text(key, f"{source}: an artifact key"): read(value, f"{source}: artifact {key!r}")
            for key, value in records.items()
        },
        answered_by=_answered_by(data.get("answered_by"), f"{source}: 'answered_by'"),
        logprobs=_flag(data["logprobs"], f"{source}: 'logprobs'") if "logprobs" in data else None,
        samples=_count(data["samples"], f"{source}: 'samples'") if "samples" in data else None,
    )


def _answered_by(value: object, where: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(item, str) and item for item in value)
    ):
        raise BaselineError(f"{where} must be a non-empty list of model names")
    return tuple(value)


def _legacy_record(raw: object, where: str) -> ArtifactRecord:
    fields = _fields(raw, where, _LEGACY_RECORD_KEYS, _LEGACY_RECORD_KEYS)
    return ArtifactRecord(
        score=_optional_fraction(fields["score"], f"{where}: score"),
        gated=_flag(fields["gated"], f"{where}: gated"),
    )


def _record(raw: object, where: str, version: int) -> ArtifactRecord:
    allowed = _RECORD_KEYS_4 if version >= SETTLED_FORMAT else _RECORD_KEYS
    if version >= INPUT_FORMAT:
        allowed = allowed | _INPUT_RECORD_KEYS
    fields = _fields(raw, where, allowed | _OPTIONAL_RECORD_KEYS, _RECORD_KEYS)
    stopped_by = fields["stopped_by"]
    if stopped_by is not None and not _one_of(stopped_by, _STOPPERS):
        raise BaselineError(
            f"{where}: stopped_by must be 'policy', 'contract' or null, got {stopped_by!r}"
        )
    questions = fields["questions"]
    if not isinstance(questions, Mapping):
        raise BaselineError(f"{where}: 'questions' must be an object, got {_kind(questions)}")
    return ArtifactRecord(
        score=_optional_fraction(fields["score"], f"{where}: score"),
        gated=_flag(fields["gated"], f"{where}: gated"),
        canon=_flag(fields["canon"], f"{where}: canon"),
        stopped_by=stopped_by,
        questions={
            _text(qid, f"{where}: a question id"): _question(
                value, f"{where}: question {qid!r}", version
            )
            for qid, value in questions.items()
        },
        digest=_optional_text(fields.get("digest"), f"{where}: digest"),
        replicates=_replicates(fields.get("replicates"), f"{where}: replicates"),
        input=_optional_text(fields.get("input"), f"{where}: input"),
    )


def _replicates(value: object, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 2 <= value <= 1000:
        raise BaselineError(f"{where} must be a whole number from 2 to 1000, got {_kind(value)}")
    return value


def _one_of(value: object, allowed: frozenset[str]) -> bool:
    # Text first: a list or mapping would make the membership test itself raise.
    return isinstance(value, str) and value in allowed


def _question(raw: object, where: str, version: int) -> QuestionRecord:
    allowed = _QUESTION_KEYS_3 if version >= 3 else _QUESTION_KEYS
    fields = _fields(raw, where, allowed, _QUESTION_KEYS - {"subject"})
    state = fields["state"]
    if not _one_of(state, _STATES):
        raise BaselineError(
            f"{where}: state must be one of {', '.join(sorted(_STATES))}, got {state!r}"
        )
    return QuestionRecord(
        score=_optional_fraction(fields["score"], f"{where}: score"),
        confidence=_optional_fraction(fields["confidence"], f"{where}: confidence"),
        state=state,
        subject=_optional_text(fields.get("subject"), f"{where}: subject"),
        distribution=_distribution(fields.get("distribution"), f"{where}: distribution"),
        asks=_asks(fields.get("asks"), f"{where}: asks"),
        principle=_optional_text(fields.get("principle"), f"{where}: principle"),
    )


def _distribution(value: object, where: str) -> tuple[tuple[str, float], ...] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not value:
        raise BaselineError(f"{where} must be an object of label to mass, got {_kind(value)}")
    return tuple(
        sorted(
            (_text(label, f"{where}: a label"), _fraction(mass, f"{where}: {label!r}"))
            for label, mass in value.items()
        )
    )


def _asks(value: object, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 1000:
        raise BaselineError(f"{where} must be a whole number from 0 to 1000, got {_kind(value)}")
    return value


def _fields(
    raw: object, where: str, allowed: frozenset[str], required: frozenset[str]
) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise BaselineError(f"{where}: expected an object, got {_kind(raw)}")
    unknown = sorted(str(k) for k in raw if k not in allowed)
    if unknown:
        raise BaselineError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}")
    missing = sorted(required - set(raw))
    if missing:
        raise BaselineError(f"{where}: missing key(s) {', '.join(map(repr, missing))}")
    return raw


def _fraction(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BaselineError(f"{where} must be a number in [0, 1], got {_kind(value)}")
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise BaselineError(f"{where} must be a number in [0, 1], got {value}")
    return float(value)


def _optional_fraction(value: object, where: str) -> float | None:
    return None if value is None else _fraction(value, where)


def _count(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BaselineError(f"{where} must be a whole number >= 1, got {_kind(value)}")
    return value


def _flag(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise BaselineError(f"{where} must be true or false, got {_kind(value)}")
    return value


def _text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise BaselineError(f"{where} must be non-empty text, got {_kind(value)}")
    return value


def _optional_text(value: object, where: str) -> str | None:
    return None if value is None else _text(value, where)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool | int | float | str):
        return f"{type(value).__name__} {value!r}"
    return f"a {type(value).__name__}"


def recorded_question(record: ArtifactRecord, question: Question) -> QuestionRecord | None:
    """The baseline row a current question compares with.

    Principles that carry ids are matched by id, so reordering or inserting principles
    keeps every comparison; a principle id the baseline never saw has no row. Without ids
    the match is by position (``P1`` is the first principle), as the rubric defines it.
    """
    rows = record.questions
    if rows is None:
        return None
    if question.principle is not None:
        same_place = rows.get(question.id)
        if same_place is not None and same_place.principle == question.principle:
            return same_place  # the common case: nothing was reordered
        for row in rows.values():
            if row.principle == question.principle:
                return row
        if any(row.principle is not None for row in rows.values()):
            return None
    return rows.get(question.id)


def require_same_rubric(baseline: Baseline, rubric: Rubric, *, source: str) -> None:
    """Refuse a baseline recorded under another rubric: two rubrics, two yardsticks."""
    recorded = f"{baseline.rubric_id} {baseline.rubric_version}"
    current = f"{rubric.id} {rubric.version}"
    same_version = baseline.rubric_id == rubric.id and baseline.rubric_version == rubric.version
    same_content = baseline.rubric_fingerprint in (None, rubric.fingerprint)
    if same_version and same_content:
        return
    if same_version:
        recorded += f" (fingerprint {baseline.rubric_fingerprint})"
        current += f" (fingerprint {rubric.fingerprint})"
    raise BaselineError(
        f"{source}: the rubric changed: the baseline was recorded under rubric {recorded}, "
        f"this Canon uses {current}; scores from two rubrics are not comparable, so run "
        '"canon accept" again to record a new baseline'
    )
