"""Audit records: a verdict with its evidence and a summary of the execution, as JSON."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from canon.gates.contracts.execution import DataSource, Execution
from canon.gates.contracts.facts import Facts
from canon.gates.contracts.model import Verdict

_PREVIEW = 200
_WIDTH = 70


def _iso(nanoseconds: int) -> str | None:
    if nanoseconds <= 0:
        return None  # unknown, rather than pretending the run happened in 1970
    moment = datetime.fromtimestamp(nanoseconds / 1e9, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _preview(text: str | None) -> str | None:
    return None if text is None else text[:_PREVIEW]


def summarize_execution(
    execution: Execution, source_map: Mapping[str, DataSource] | None = None
) -> dict[str, Any]:
    """The execution facts an auditor needs without opening the trace."""
    starts = [step.start_ns for step in execution.steps if step.start_ns > 0]
    ends = [step.end_ns for step in execution.steps if step.end_ns > 0]
    return {
        "execution_id": execution.execution_id,
        "framework": execution.framework,
        "started_at": _iso(min(starts)) if starts else None,
        "ended_at": _iso(max(ends)) if ends else None,
        "step_count": len(execution.steps),
        "tool_calls": [step.name for step in execution.steps if step.kind == "tool_call"],
        "failed_steps": [step.name for step in execution.steps if step.status == "error"],
        "data_sources_consulted": sorted(Facts(execution, source_map or {}).sources),
        "input_preview": _preview(execution.input_text),
        "output_preview": _preview(execution.output_text),
    }


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One validation, preserved as evidence: verdict, per-constraint outcome, execution summary."""

    audit_id: str
    timestamp: str
    verdict: Verdict
    execution_summary: Mapping[str, Any]
    trace: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (this is what monitors store on disk)."""
        by_index = {violation.index: violation for violation in self.verdict.violations}
        checklist: list[dict[str, Any]] = []
        for index, name in enumerate(self.verdict.constraint_names):
            entry: dict[str, Any] = {"index": index, "constraint": name}
            violation = by_index.get(index)
            if violation is not None:
                entry["outcome"] = "violated"
                entry.update(
                    severity=violation.severity,
                    type=violation.category,
                    method=violation.method,
                    message=violation.message,
                    evidence=dict(violation.evidence),
                )
            else:
                entry["outcome"] = "skipped" if index in self.verdict.skipped else "passed"
            checklist.append(entry)
        return {
            "audit_id": self.audit_id,
            "timestamp": self.timestamp,
            "trace": self.trace,
            "contract_name": self.verdict.contract_name,
            "contract_version": self.verdict.contract_version,
            "verdict": self.verdict.to_dict(),
            "evidence_package": checklist,
            "execution_summary": dict(self.execution_summary),
        }


def create_audit_record(
    verdict: Verdict,
    execution: Execution,
    *,
    source_map: Mapping[str, DataSource] | None = None,
    trace: str | None = None,
    audit_id: str | None = None,
    timestamp: datetime | None = None,
) -> AuditRecord:
    """Wrap a verdict and its execution into an audit record (id and time may be pinned)."""
    moment = timestamp or datetime.now(UTC)
    return AuditRecord(
        audit_id=audit_id or str(uuid.uuid4()),
        timestamp=moment.isoformat(timespec="seconds").replace("+00:00", "Z"),
        verdict=verdict,
        execution_summary=summarize_execution(execution, source_map),
        trace=trace,
    )


def render_audit_report(record: AuditRecord | Mapping[str, Any]) -> str:
    """Render an audit record (the value or its stored JSON) as a plain-text report."""
    data = record.to_dict() if isinstance(record, AuditRecord) else record
    verdict = data["verdict"]
    summary = data.get("execution_summary", {})
    violations = verdict.get("violations", [])
    lines = [
        "=" * _WIDTH,
        "AUDIT RECORD",
        f"  ID:        {data.get('audit_id')}",
        f"  Timestamp: {data.get('timestamp')}",
        f"  Contract:  {data.get('contract_name')} v{data.get('contract_version')}",
    ]
    if data.get("trace"):
        lines.append(f"  Trace:     {data['trace']}")
    lines += [
        f"  Verdict:   {str(verdict['status']).upper()}",
        f"  Checks:    {verdict['checks_passed']}/{verdict['checks_performed']} passed"
        + (
            f" ({len(verdict.get('skipped', []))} skipped by when:)"
            if verdict.get("skipped")
            else ""
        ),
        "-" * _WIDTH,
    ]
    if violations:
        lines.append(f"VIOLATIONS ({len(violations)}):")
        for violation in violations:
            severity = str(violation["severity"]).upper()
            lines.append(f"  #{violation['index']} [{severity}] {violation['name']}")
            lines.append(f"      {violation['message']}")
            if violation.get("method"):
                lines.append(f"      method: {violation['method']}")
            for key, value in violation["evidence"].items():
                lines.append(f"      {key}: {value}")
        lines.append("-" * _WIDTH)
    lines += [
        "EXECUTION SUMMARY:",
        f"  ID:           {summary.get('execution_id')}",
        f"  Framework:    {summary.get('framework')}",
        f"  Steps:        {summary.get('step_count')}",
        f"  Tool calls:   {', '.join(summary.get('tool_calls') or []) or '(none)'}",
        f"  Data sources: {', '.join(summary.get('data_sources_consulted') or []) or '(none)'}",
    ]
    if summary.get("failed_steps"):
        lines.append(f"  Failed steps: {', '.join(summary['failed_steps'])}")
    lines.append("=" * _WIDTH)
    return "\n".join(lines) + "\n"
