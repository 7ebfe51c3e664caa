"""The alignment file next to a suite's baseline: ``<baselines_dir>/<suite>.alignment.json``."""

from __future__ import annotations

import os
from pathlib import Path

from canon.core.alignment import (
    AlignmentRecord,
    alignment_from_data,
    alignment_to_data,
    merge_record,
)
from canon.errors import BaselineError
from canon.project.store import read_json, write_json_atomic

ALIGNMENT_SUFFIX = ".alignment.json"


def alignment_path(baseline: Path) -> Path:
    """Where the alignment of the suite whose baseline is ``baseline`` lives."""
    return baseline.with_name(baseline.name.removesuffix(".json") + ALIGNMENT_SUFFIX)


def read_alignment(path: Path, shown: str | None = None) -> tuple[AlignmentRecord, ...]:
    """The records in an alignment file; none when there is no file yet."""
    if not os.path.lexists(path):
        return ()
    source = shown or str(path)
    data = read_json(path, "alignment file", BaselineError)
    return alignment_from_data(data, source=source)


def write_alignment(path: Path, record: AlignmentRecord, shown: str | None = None) -> None:
    """Record ``record`` in the file atomically, replacing one of the same provenance."""
    records = merge_record(read_alignment(path, shown), record)
    try:
        write_json_atomic(path, alignment_to_data(records))
    except OSError as exc:
        raise BaselineError(
            f"cannot write the alignment file {shown or path}: {exc.strerror or exc}; "
            "make it a writable file path"
        ) from None
