"""The contract gate as ``CoherenceMetric`` sees it: a trace in, a ``GateOutcome`` out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from canon.core.gate_outcome import GateOutcome
from canon.gates.contracts.execution import DataSource, Execution
from canon.gates.contracts.model import Contract, Verdict
from canon.gates.contracts.validate import validate


def as_execution(
    trace: Execution | object,
    *,
    metadata: Mapping[str, Any] | None = None,
    source: str = "<trace>",
) -> Execution:
    """Normalize a parsed trace (or pass an ``Execution`` through), overlaying ``metadata``."""
    if isinstance(trace, Execution):
        if not metadata:
            return trace
        return replace(trace, metadata={**trace.metadata, **metadata})
    # Imported here so that loading contracts never pays for the normalizer.
    from canon.gates.contracts.otel import normalize_trace

    return normalize_trace(trace, metadata=dict(metadata) if metadata else None, source=source)


def verdict_reasons(verdict: Verdict) -> tuple[str, ...]:
    """One line per violation: index, name, severity and message."""
    return tuple(
        f"contract {verdict.contract_name} constraint #{violation.index} "
        f"{violation.name} ({violation.severity}): {violation.message}"
        for violation in verdict.violations
    )


def contract_outcome(
    contract: Contract,
    trace: Execution | object,
    *,
    metadata: Mapping[str, Any] | None = None,
    source_map: Mapping[str, DataSource] | None = None,
) -> GateOutcome:
    """Run the contract on one artifact's trace: FAIL stops the judge, WARN becomes a note.

    A trace that cannot be normalized raises ``TraceError`` (an ``InputError``): an
    unreadable trace is bad input, not a passing artifact.
    """
    verdict = validate(contract, as_execution(trace, metadata=metadata), source_map=source_map)
    return GateOutcome(gate="contract", status=verdict.status, reasons=verdict_reasons(verdict))
