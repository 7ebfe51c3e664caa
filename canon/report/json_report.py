"""A JSON document of scoring results, for machines and CI artifacts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from canon.check.runner import ScoringPlan
from canon.check.spend import run_usage
from canon.core.artifact import Artifact
from canon.core.scoring import ArtifactResult, Cell, looks_data
from canon.core.verdict import Verdict, judge_failures, verdict_counts, verdict_of


def results_document(
    results: Sequence[ArtifactResult],
    plan: ScoringPlan,
    artifacts: Sequence[Artifact] = (),
) -> dict[str, Any]:
    """Results as plain data with the rubric, judge and constitution they were scored under;
    each artifact with the input it answers and its context, when ``artifacts`` give them."""
    given = {a.key: a for a in artifacts}
    return {
        "rubric": {
            "id": plan.rubric.id,
            "version": plan.rubric.version,
            "fingerprint": plan.rubric.fingerprint,
        },
        "judge": plan.judge.name,
        "constitution": plan.constitution.digest,
        "threshold": plan.threshold,
        "artifacts": [with_material(result_record(r), given.get(r.key)) for r in results],
        "summary": summary_record(results),
        "usage": run_usage(results).as_data(),
    }


def with_material(record: dict[str, Any], artifact: Artifact | None) -> dict[str, Any]:
    """An artifact's record with its ``input`` (text, or a list of ``{role, content}``) and
    ``context`` (a list of texts), when it has them."""
    if artifact is None:
        return record
    value = artifact.input
    if isinstance(value, str):
        record["input"] = value
    elif value is not None:
        record["input"] = [{"role": m.role, "content": m.content} for m in value]
    if artifact.context:
        record["context"] = list(artifact.context)
    return record


def summary_record(results: Sequence[ArtifactResult]) -> dict[str, Any]:
    """The run's verdict counts, and why the judge failed (each error once, counted)."""
    counts = verdict_counts(results)
    return {
        "artifacts": len(results),
        **{verdict.value: counts[verdict] for verdict in Verdict},
        "unscored_questions": sum(len(r.unscored) for r in results),
        "refused_questions": sum(len(r.refused) for r in results),
        "judge_failures": [
            {"error": error, "questions": count} for error, count in judge_failures(results)
        ],
    }


def result_record(result: ArtifactResult) -> dict[str, Any]:
    """One artifact's verdict as plain data."""
    return {
        "key": result.key,
        "verdict": verdict_of(result).value,
        "canon": result.canon,
        "score": result.score,
        "raw_score": result.raw_score,
        "gated": result.gated,
        "stopped_by": result.stopped_by,
        "reasons": list(result.reasons),
        "reason_codes": [r.code for r in result.reasons],  # canon.core.outcome.ReasonKind
        "notes": list(result.notes),
        "note_codes": [n.code for n in result.notes],
        "gates": [
            {"gate": g.gate, "status": g.status, "reasons": list(g.reasons)} for g in result.gates
        ],
        "questions": {c.id: _cell_record(c) for c in result.cells},
    }


def _cell_record(cell: Cell) -> dict[str, Any]:
    record: dict[str, Any] = {
        "state": cell.state,
        "score": cell.score,
        "confidence": cell.confidence,
    }
    if cell.question.subject is not None:
        record["subject"] = cell.question.subject
    if cell.error is not None:
        record["error"] = cell.error
    if cell.rationale is not None:
        record["reason"] = cell.rationale  # the judge's own words, in full
    if cell.looks:  # a judge that answers in probabilities: its answer, and each look's
        record["probabilities"] = {label: round(mass, 6) for label, mass in cell.distribution}
        record["looks"] = looks_data(cell)
    return record
