"""The record of submitted batches kept next to the answer cache, so a killed run resumes.

One JSON file (``<cache>.batches.json``): per batch its provider id, the judge identity it
was asked under, and the cache keys of its questions. Written atomically the moment a batch
is created and removed once its answers are in the cache.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from canon.errors import CacheError

_STATE_FORMAT = 1


def state_path(cache_path: Path) -> Path:
    """Where the resumable batch ids are kept: next to the answer cache."""
    return cache_path.with_name(cache_path.name + ".batches.json")


def read_state(path: Path) -> list[dict[str, Any]]:
    """The batches recorded at ``path`` (none when there is no file); CacheError if unusable."""
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CacheError(
            f"{path}: cannot read the pending batch ids ({exc}); delete the file to start "
            "a new batch (a batch already submitted is then paid for again)"
        ) from None
    batches = data.get("batches") if isinstance(data, dict) else None
    if not isinstance(batches, list) or not all(
        isinstance(e, dict)
        and isinstance(e.get("id"), str)
        and isinstance(e.get("identity"), str)
        and isinstance(e.get("keys"), list)
        for e in batches
    ):
        raise CacheError(
            f"{path}: is not a list of pending batches; delete the file to start a new batch"
        )
    return batches


def write_state(path: Path, entries: Sequence[Mapping[str, Any]]) -> None:
    """Record ``entries`` atomically; no entries removes the file."""
    if not entries:
        path.unlink(missing_ok=True)
        return
    text = json.dumps({"format": _STATE_FORMAT, "batches": list(entries)}, sort_keys=True, indent=2)
    temporary = path.with_name(path.name + ".tmp")
    try:
        temporary.write_text(text + "\n", encoding="utf-8")
        os.replace(temporary, path)
    except OSError as exc:
        raise CacheError(
            f"{path}: cannot record the batch ids ({exc.strerror or exc}); make the answer "
            "cache's directory writable"
        ) from None
