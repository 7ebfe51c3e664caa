"""The decisions the monitors recorded: from a directory of audit records, or from Redis."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from canon.core.online import Decision
from canon.errors import InputError
from canon.monitor.ledger import DECISION_FIELD, audit_records


def decisions_of(records: Iterable[tuple[str, Mapping[str, Any]]]) -> list[Decision]:
    """The decision of each (where, record) that has one; a damaged one is an InputError
    naming where it was (records without a decision, contract-only ones, are skipped)."""
    found = []
    for where, record in records:
        if DECISION_FIELD in record:
            found.append(Decision.from_dict(record[DECISION_FIELD], where))
    found.sort(key=lambda decision: decision.at)
    return found


def directory_records(directory: Path) -> Iterable[tuple[str, Mapping[str, Any]]]:
    """The audit records of a monitor's output directory (other files are skipped)."""
    if not directory.is_dir():
        raise InputError(f"--records {directory}: not a directory of audit records")
    return audit_records(directory)
