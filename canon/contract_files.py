"""The contract gate's file edge: reading traces and contracts, writing records atomically.

The rest of the package takes and returns values; only this module, the monitor and the
CLI touch the file system.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from canon.errors import InputError
from canon.gates.contracts.audit import AuditRecord
from canon.gates.contracts.errors import ContractError
from canon.gates.contracts.execution import DataSource, Execution
from canon.gates.contracts.loader import load_contract, parse_source_map, parse_yaml
from canon.gates.contracts.model import Contract
from canon.gates.contracts.templates import TEMPLATE_NAMES, load_template


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def to_json_text(data: Any) -> str:
    """Deterministic JSON: sorted keys, indent 2, trailing newline."""
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n"


def _read_text(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{what} {path} does not exist; check the path") from None
    except IsADirectoryError:
        raise InputError(f"{what} {path} is a directory; pass a file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{what} {path} cannot be read: {exc}") from None


def load_contract_file(name_or_path: str) -> Contract:
    """A bundled template by name, else a YAML contract file."""
    if name_or_path in TEMPLATE_NAMES:
        return load_template(name_or_path)
    path = Path(name_or_path)
    if not path.exists():
        raise ContractError(
            f"contract {name_or_path!r} is neither a file nor a bundled template "
            f"({', '.join(TEMPLATE_NAMES)})"
        )
    return load_contract(_read_text(path, "contract"), origin=str(path))


def read_source_map(path: Path) -> dict[str, DataSource]:
    """Read a JSON or YAML tool → source map file."""
    raw = parse_yaml(_read_text(path, "source map"), str(path))
    try:
        return parse_source_map(raw, str(path))
    except ContractError as exc:
        raise ContractError(f"{exc}; expected {{tool: {{source_name, source_type}}}}") from None


def read_trace(path: Path, *, metadata: Mapping[str, Any] | None = None) -> Execution:
    """Read, parse and normalize one trace file; raises ``InputError`` when it is no trace."""
    from canon.gates.contracts.otel import normalize_trace, parse_trace_text

    text = _read_text(path, "trace")
    raw = parse_trace_text(text, source=str(path))
    return normalize_trace(raw, metadata=dict(metadata) if metadata else None, source=str(path))


def write_audit_record(record: AuditRecord | Mapping[str, Any], directory: Path, stem: str) -> Path:
    """Store a record as ``<status>_<stem>.json``, adding ``_2``, ``_3``… rather than overwrite."""
    data = record.to_dict() if isinstance(record, AuditRecord) else dict(record)
    status = data.get("verdict", {}).get("status", "error")
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{status}_{stem}.json"
    counter = 2
    while target.exists():
        target = directory / f"{status}_{stem}_{counter}.json"
        counter += 1
    write_text_atomic(target, to_json_text(data))
    return target
