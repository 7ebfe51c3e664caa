"""The decisions the monitors recorded: from a directory of audit records, or from Redis."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from canon.core.online import Decision
from canon.errors import InputError
from canon.monitor.judging import DECISION_FIELD


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
    for entry in sorted(os.scandir(directory), key=lambda item: item.name):
        if entry.name.startswith(".") or not entry.name.endswith(".json"):
            continue
        try:
            with open(entry.path, encoding="utf-8") as stream:
                data = json.load(stream)
        except (OSError, ValueError):
            continue  # not a record of ours: records are written whole, never torn
        if isinstance(data, dict):
            yield entry.path, data
