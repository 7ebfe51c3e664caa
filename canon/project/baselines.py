"""The baseline store: where a suite's baseline lives, how it is read and how it is written.

One reader and one writer for every door (``canon accept``/``check``/``rejudge`` and the
pytest plugin's ``canon_baseline``): the same size limit, the same refusal of files that are
not regular, the same format versions and advice, atomic writes that never leave a file
that would not load.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from canon.core.baseline import BASELINE_FORMAT, Baseline, baseline_from_data, baseline_to_data
from canon.errors import BaselineError, ConfigError
from canon.project.config import Config
from canon.project.store import BASELINE_LIMIT, dump_json, read_json, write_text_atomic

__all__ = [
    "BASELINE_LIMIT",
    "baseline_file",
    "read_baseline",
    "refuse_newer",
    "write_baseline",
    "write_baseline_data",
]


def baseline_file(config: Config, name: str) -> Path:
    """Where the baseline called ``name`` lives: ``<baselines_dir>/<name>.json`` (a suite's
    name is its file's stem; the pytest plugin's is ``--canon-baseline``)."""
    if config.baselines_dir is None:
        raise ConfigError(f"{config.source or 'canon.yaml'}: set 'baselines_dir'")
    return config.baselines_dir / f"{name}.json"


def read_baseline(
    path: Path, *, shown: str | None = None, name: str | None = None, record: str = ""
) -> Baseline:
    """Read and validate a baseline file.

    ``shown``: how messages name the file (default: the path); ``name``: the suite's or the
    session's name; ``record``: how to record a missing one (the door's own command).
    """
    where = shown or str(path)
    if not os.path.lexists(path):  # a broken link or a loop is read below, and reported
        subject = f" for suite '{name}'" if name else ""
        advice = f"; {record}" if record else ""
        raise BaselineError(f"no baseline{subject} at {where}{advice}")
    data = read_json(path, "baseline", BaselineError, limit=BASELINE_LIMIT)
    return baseline_from_data(data, source=where)


def refuse_newer(path: Path, *, shown: str | None = None) -> None:
    """Refuse to replace a baseline that a newer Canon wrote: this one cannot carry it."""
    if not path.is_file():
        return
    try:
        data = read_json(path, "baseline", BaselineError, limit=BASELINE_LIMIT)
    except BaselineError:
        return  # an unreadable file is replaced: that is what accept is for
    version = data.get("format") if isinstance(data, dict) else None
    if isinstance(version, int) and not isinstance(version, bool) and version > BASELINE_FORMAT:
        raise BaselineError(
            f"{shown or path}: written by a newer Canon (baseline format {version}; this one "
            f"writes format {BASELINE_FORMAT}) and not replaced; upgrade canon-testing, or "
            "delete the file to record it again with this version"
        )


def write_baseline(path: Path, baseline: Baseline, *, shown: str | None = None) -> bool:
    """Write ``baseline`` atomically; True when the file already held exactly this."""
    return write_baseline_data(path, baseline_to_data(baseline), shown=shown)


def write_baseline_data(path: Path, document: dict[str, Any], *, shown: str | None = None) -> bool:
    """Write a baseline document atomically, after checking it loads (nothing is written
    that could not be read back); True when the file already held exactly this."""
    where = shown or str(path)
    baseline_from_data(document, source=where)  # never write what cannot load
    refuse_newer(path, shown=where)
    text = dump_json(document)
    try:
        unchanged = path.is_file() and path.read_bytes() == text.encode("utf-8")
    except OSError:
        unchanged = False  # unreadable now: the write below says why, if it fails too
    if unchanged:
        return True
    try:
        write_text_atomic(path, text)
    except OSError as exc:
        raise BaselineError(
            f"cannot write the baseline {where}: {exc.strerror or exc}; make it a writable "
            "file path"
        ) from None
    return False
