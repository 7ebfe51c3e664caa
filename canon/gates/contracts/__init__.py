"""Behavioral contracts over OpenTelemetry traces: a deterministic, pre-judge gate.

Load a contract (YAML text, a mapping, or a bundled template), normalize a trace into an
``Execution``, and ``validate`` one against the other to get a ``Verdict``.
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
from canon.gates.contracts.loader import CONSTRAINT_TYPES, load_contract, parse_source_map
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
    "MonitorStats",
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
    "monitor_directory",
    "must_contain_citations",
    "must_escalate_when",
    "must_include_steps",
    "must_not_include_steps",
    "must_not_use_only_parametric_knowledge",
    "must_precede",
    "must_retrieve_from",
    "normalize_trace",
    "parse_source_map",
    "parse_trace_text",
    "render_audit_report",
    "validate",
    "when",
]

_FROM_NORMALIZER = ("TraceError", "normalize_trace", "parse_trace_text")
_FROM_MONITOR = ("MonitorStats", "monitor_directory")


def __getattr__(name: str) -> Any:
    # The normalizer is imported on first use so loading contracts stays cheap.
    if name in _FROM_NORMALIZER:
        from canon.gates.contracts import otel

        return getattr(otel, name)
    # The monitor reads and writes files, so it lives at the edge (canon.monitor); it is
    # offered here too because this is where contract users look for it.
    if name in _FROM_MONITOR:
        import canon.monitor

        return getattr(canon.monitor, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
