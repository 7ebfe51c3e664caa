"""Results as OpenTelemetry ``gen_ai.evaluation.result`` events: plain values, no SDK.

One event per artifact verdict (``canon.verdict``), one per question answer
(``canon.<question id>``), one per deterministic gate that ran (``canon.gate.<gate>``) and,
for a check, one for the run's comparison with its baseline (``canon.check``).
Attribute names follow the GenAI semantic conventions where one exists
(``gen_ai.evaluation.*``, ``error.type``, ``gen_ai.response.id``); what only Canon knows
(judge, rubric, question fingerprint, artifact id) lives under ``canon.*``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from canon.check.runner import ScoringPlan
from canon.core.compare import Comparison
from canon.core.gate_outcome import GateOutcome
from canon.core.rubric import Question
from canon.core.scoring import ArtifactResult, Cell
from canon.core.verdict import verdict_of
from canon.gates.contracts.execution import Execution, Step
from canon.gates.contracts.otel.tree import root_position

EVENT_NAME = "gen_ai.evaluation.result"
VERDICT_EVALUATION = "canon.verdict"
CHECK_EVALUATION = "canon.check"
# What error.type says when the judge failed without naming a class of failure.
UNKNOWN_ERROR_TYPE = "_OTHER"
REFUSED_LABEL = "judge_refused"  # the label of a question the judge refused to judge

AttributeValue = str | bool | int | float
Attributes = dict[str, AttributeValue]

_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
_SPAN_ID = re.compile(r"^[0-9a-f]{16}$")


@dataclass(frozen=True, slots=True)
class TraceLink:
    """The span an artifact's evaluation belongs to: W3C ids in lowercase hex."""

    trace_id: str
    span_id: str
    response_id: str | None = None  # gen_ai.response.id of the answer, when the trace has one


@dataclass(frozen=True, slots=True)
class EvaluationEvent:
    """One log record to send: its event name, attributes and (optional) parent span."""

    attributes: Mapping[str, AttributeValue]
    trace_id: str | None = None
    span_id: str | None = None
    name: str = EVENT_NAME


def evaluation_events(
    results: Sequence[ArtifactResult],
    plan: ScoringPlan,
    *,
    links: Mapping[str, TraceLink] | None = None,
    suite: str | None = None,
    comparison: Comparison | None = None,
) -> tuple[EvaluationEvent, ...]:
    """Every event a run's results make, artifact by artifact in result order; ``links``
    maps artifact keys to the span each artifact came from. With the ``comparison`` of a
    check, flipped questions and known failures say so, and a ``canon.check`` event ends it."""
    links = links or {}
    run = _run_attributes(plan, suite)
    flips = {(f.key, f.question): f for f in comparison.flips} if comparison else {}
    known = {n.key for n in comparison.known} if comparison else set()
    fingerprints: dict[Question, str] = {}  # every artifact is asked the same questions
    events: list[EvaluationEvent] = []
    for result in results:
        link = links.get(result.key)
        common = dict(run)
        common["canon.artifact.id"] = result.key
        if link is not None and link.response_id:
            common["gen_ai.response.id"] = link.response_id
        parent = (link.trace_id, link.span_id) if link is not None else (None, None)
        verdict = _verdict(result, common)
        if comparison is not None and not result.canon:
            verdict["canon.check.known_failure"] = result.key in known
        events.append(EvaluationEvent(verdict, *parent))
        for outcome in result.gates:
            if outcome.status != "skip":
                events.append(EvaluationEvent(_gate(outcome, common), *parent))
        for cell in result.cells:
            fingerprint = fingerprints.get(cell.question)
            if fingerprint is None:
                fingerprint = fingerprints[cell.question] = question_fingerprint(cell.question)
            attributes = _question(cell, common, fingerprint)
            flip = flips.get((result.key, cell.id))
            if flip is not None:
                attributes["canon.check.flip"] = flip.status
                attributes["canon.check.baseline_score"] = flip.baseline_score
            events.append(EvaluationEvent(attributes, *parent))
    if comparison is not None:
        events.append(EvaluationEvent(_check(comparison, run)))
    return tuple(events)


def _check(comparison: Comparison, run: Attributes) -> Attributes:
    """The run against its baseline: not about one span, so never parented."""
    attributes: Attributes = {
        "gen_ai.evaluation.name": CHECK_EVALUATION,
        **run,
        "gen_ai.evaluation.score.label": comparison.status,
        "canon.check.artifacts": comparison.checked,
        "canon.check.regressions": len(comparison.regressions),
        "canon.check.failures": len(comparison.failures),
        "canon.check.new": len(comparison.new),
        "canon.check.missing": len(comparison.missing),
        "canon.check.drift_regressed": comparison.drift.regressed,
    }
    if comparison.drift.drop is not None:
        attributes["canon.check.mean_drop"] = comparison.drift.drop
    parts = [
        f"{len(comparison.regressions)} regression(s)",
        f"{len(comparison.failures)} non-canon failure(s)",
    ]
    if comparison.drift.regressed:
        parts.append("the mean score dropped beyond noise")
    if comparison.inconclusive:
        parts.append("the judge is too noisy to tell: " + "; ".join(comparison.inconclusive))
    attributes["gen_ai.evaluation.explanation"] = f"{comparison.status}: " + ", ".join(parts)
    return attributes


def _run_attributes(plan: ScoringPlan, suite: str | None) -> Attributes:
    attributes: Attributes = {
        "canon.judge.model": plan.judge.name,
        "canon.rubric.id": plan.rubric.id,
        "canon.rubric.version": plan.rubric.version,
        "canon.rubric.fingerprint": plan.rubric.fingerprint,
        "canon.constitution.digest": plan.constitution.digest,
    }
    if suite is not None:
        attributes["canon.suite"] = suite
    return attributes


def _verdict(result: ArtifactResult, common: Attributes) -> Attributes:
    attributes: Attributes = {"gen_ai.evaluation.name": VERDICT_EVALUATION, **common}
    if result.score is not None:
        attributes["gen_ai.evaluation.score.value"] = result.score
    # canon, non_canon, or incomplete (not judged: the judge failed, nothing against it)
    attributes["gen_ai.evaluation.score.label"] = verdict_of(result).value
    attributes["gen_ai.evaluation.explanation"] = _verdict_explanation(result)
    attributes["canon.threshold"] = result.threshold
    attributes["canon.gated"] = result.gated
    if result.stopped_by is not None:
        attributes["canon.stopped_by"] = result.stopped_by
    if result.unscored:
        # the verdict is incomplete for want of answers: the class of the first failure
        attributes["error.type"] = result.unscored[0].error_type or UNKNOWN_ERROR_TYPE
    return attributes


def _verdict_explanation(result: ArtifactResult) -> str:
    if result.reasons:
        return "; ".join(result.reasons)
    if result.score is None:
        return "canon: no question was asked"
    return f"canon: score {result.score:.3f} meets the threshold {result.threshold:g}"


def _gate(outcome: GateOutcome, common: Attributes) -> Attributes:
    attributes: Attributes = {
        "gen_ai.evaluation.name": f"canon.gate.{outcome.gate}",
        **common,
        "gen_ai.evaluation.score.label": outcome.status,
    }
    if outcome.reasons:
        attributes["gen_ai.evaluation.explanation"] = "; ".join(outcome.reasons)
    return attributes


def _question(cell: Cell, common: Attributes, fingerprint: str) -> Attributes:
    question = cell.question
    attributes: Attributes = {
        "gen_ai.evaluation.name": f"canon.{question.id}",
        **common,
        "canon.question.id": question.id,
        "canon.question.kind": question.kind,
        "canon.question.fingerprint": fingerprint,
    }
    if question.principle is not None:
        attributes["canon.question.principle"] = question.principle
    if question.subject is not None:
        attributes["canon.question.subject"] = question.subject
    if cell.state == "unscored":
        attributes["error.type"] = cell.error_type or UNKNOWN_ERROR_TYPE
        if cell.error:
            attributes["error.message"] = cell.error
        return attributes
    if cell.state == "refused":  # an outcome, not an error: the judge declined to judge
        attributes["gen_ai.evaluation.score.label"] = REFUSED_LABEL
        if cell.error:
            attributes["gen_ai.evaluation.explanation"] = cell.error
        return attributes
    if cell.score is not None:
        attributes["gen_ai.evaluation.score.value"] = cell.score
    label = modal_label(cell)
    if label is not None:
        attributes["gen_ai.evaluation.score.label"] = label
    if cell.confidence is not None:
        attributes["canon.question.confidence"] = cell.confidence
    if cell.rationale:
        attributes["gen_ai.evaluation.explanation"] = cell.rationale
    return attributes


def modal_label(cell: Cell) -> str | None:
    """The choice the judge gave most mass to (the first of equals), or None."""
    best: tuple[str, float] | None = None
    for label, mass in cell.distribution:
        if best is None or mass > best[1]:
            best = (label, mass)
    return None if best is None else best[0]


def question_fingerprint(question: Question) -> str:
    """A digest of what a question asks and the choices it offers (16 hex digits)."""
    material = {
        "id": question.id,
        "kind": question.kind,
        "text": question.text,
        "choices": [[c.label, c.score] for c in question.choices],
    }
    canonical = json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def trace_link(execution: Execution) -> TraceLink | None:
    """The root span of a normalized trace as a parent for evaluation events; None when
    its root has no W3C trace and span ids (32 and 16 hex digits, not all zero)."""
    steps = execution.steps
    if not steps:
        return None
    span_ids = [step.span_id for step in steps]
    root = steps[root_position(span_ids, [step.parent_id for step in steps])]
    trace_id = execution.execution_id.lower()
    span_id = root.span_id.lower()
    if not _TRACE_ID.match(trace_id) or not _SPAN_ID.match(span_id):
        return None
    if trace_id == "0" * 32 or span_id == "0" * 16:
        return None  # all-zero ids are invalid in W3C trace context
    return TraceLink(trace_id, span_id, _response_id(steps))


def _response_id(steps: Sequence[Step]) -> str | None:
    """The last ``gen_ai.response.id`` a span of the trace recorded (the final answer's)."""
    found: str | None = None
    for step in steps:
        value = step.attributes.get("gen_ai.response.id")
        if isinstance(value, str) and value.strip():
            found = value
    return found
