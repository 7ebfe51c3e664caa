"""Behavioral contracts over OpenTelemetry traces: a deterministic, pre-judge gate.

Load a contract (YAML text, a mapping, or a bundled template), normalize a trace into an
``Execution``, and ``validate`` one against the other to get a ``Verdict``. Watching a
directory or a CloudWatch log group is I/O and lives at the edge, in ``canon.monitor``.
"""

from __future__ import annotations

from typing import Any

from canon.gates.contracts.audit import AuditRecord, create_audit_record, render_audit_report
from canon.gates.contracts.builders import (
    must_contain_citations,
    must_escalate_when,
    must_include_steps,
    must_not_include_steps,
    must_not_use_only_parametric_knowledge,
    must_precede,
    must_retrieve_from,
    when,
)
from canon.gates.contracts.citations import find_citations
from canon.gates.contracts.dump import dump_contract
from canon.gates.contracts.errors import ContractError
from canon.gates.contracts.execution import DataSource, Execution, Step, StepColumns
from canon.gates.contracts.generate import generate_contract
from canon.gates.contracts.kinds import CONSTRAINT_TYPES
from canon.gates.contracts.loader import load_contract, merge_source_maps, parse_source_map
from canon.gates.contracts.model import Contract, Verdict, Violation
from canon.gates.contracts.outcome import contract_outcome
from canon.gates.contracts.templates import TEMPLATE_NAMES, list_templates, load_template
from canon.gates.contracts.validate import validate

__all__ = [
    "CONSTRAINT_TYPES",
    "TEMPLATE_NAMES",
    "AuditRecord",
    "Contract",
    "ContractError",
    "DataSource",
    "Execution",
    "Step",
    "StepColumns",
    "TraceError",
    "Verdict",
    "Violation",
    "contract_outcome",
    "create_audit_record",
    "dump_contract",
    "find_citations",
    "generate_contract",
    "list_templates",
    "load_contract",
    "load_template",
    "merge_source_maps",
    "must_contain_citations",
    "must_escalate_when",
    "must_include_steps",
    "must_not_include_steps",
    "must_not_use_only_parametric_knowledge",
    "must_precede",
    "must_retrieve_from",
    "normalize_trace",
    "normalize_trace_text",
    "normalize_traces",
    "normalize_traces_text",
    "parse_source_map",
    "parse_trace_text",
    "render_audit_report",
    "validate",
    "when",
]

_FROM_NORMALIZER = (
    "TraceError",
    "normalize_trace",
    "normalize_trace_text",
    "normalize_traces",
    "normalize_traces_text",
    "parse_trace_text",
)


def __getattr__(name: str) -> Any:
    # The normalizer is imported on first use so loading contracts stays cheap.
    if name in _FROM_NORMALIZER:
        from canon.gates.contracts import otel

        return getattr(otel, name)
    if name in ("MonitorStats", "monitor_directory", "monitor_cloudwatch"):
        # the gates are pure and import nothing above them; the monitors read and write
        raise AttributeError(
            f"{name} moved to canon.monitor (it reads files and AWS, so it is no gate): "
            f"use `from canon.monitor import {name}`"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
