"""The contract gate's file edge: reading contracts, source maps and traces; writing records.

``canon.gates.contracts`` takes and returns values; this module, the monitor and the CLI
are where the file system is touched.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from canon.errors import InputError
from canon.gates.contracts.audit import AuditRecord
from canon.gates.contracts.errors import ContractError
from canon.gates.contracts.execution import DataSource, Execution
from canon.gates.contracts.loader import (
    PYTHON_CONTRACT_MESSAGE,
    PYTHON_SUFFIXES,
    load_contract,
    looks_like_python,
    parse_source_map,
)
from canon.gates.contracts.model import Contract
from canon.gates.contracts.templates import TEMPLATE_NAMES, load_template
from canon.project.store import (
    SETTINGS_LIMIT,
    dump_json,
    parse_yaml,
    read_text,
    read_yaml,
    write_new_file,
)

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")  # what a trace id may not bring into a file name


def load_contract_file(name_or_path: str) -> Contract:
    """A bundled template by name, else a YAML contract file."""
    if name_or_path in TEMPLATE_NAMES:
        return load_template(name_or_path)
    path = Path(name_or_path)
    if not path.exists() and not path.is_symlink():
        raise ContractError(
            f"contract {name_or_path!r} is neither a file nor a bundled template "
            f"({', '.join(TEMPLATE_NAMES)})"
        )
    if path.suffix.lower() in PYTHON_SUFFIXES:
        raise ContractError(f"{path}: {PYTHON_CONTRACT_MESSAGE}")
    text = read_text(path, "contract", ContractError, limit=SETTINGS_LIMIT)
    try:
        # Canon's one strict YAML reader: duplicate keys and deep nesting are refused.
        raw = parse_yaml(text, str(path), ContractError)
    except ContractError:
        if looks_like_python(text):
            raise ContractError(f"{path}: {PYTHON_CONTRACT_MESSAGE}") from None
        raise
    if not isinstance(raw, Mapping) and looks_like_python(text):
        # Python text can also parse as one YAML string; a valid YAML mapping never gets here
        raise ContractError(f"{path}: {PYTHON_CONTRACT_MESSAGE}")
    return load_contract(raw, origin=str(path))


def read_source_map(path: Path) -> dict[str, DataSource]:
    """Read a JSON or YAML tool → source map file."""
    raw = read_yaml(path, "source map", ContractError, limit=SETTINGS_LIMIT)
    try:
        return parse_source_map(raw, str(path))
    except ContractError as exc:
        raise ContractError(f"{exc}; expected {{tool: {{source_name, source_type}}}}") from None


def read_trace(path: Path, *, metadata: Mapping[str, Any] | None = None) -> Execution:
    """Read, parse and normalize one trace file; raises ``InputError`` when it is no trace."""
    from canon.gates.contracts.otel import normalize_trace_text

    text = read_text(path, "trace", InputError)
    extra = dict(metadata) if metadata else None
    return normalize_trace_text(text, metadata=extra, source=str(path))


def read_trace_runs(path: Path, *, metadata: Mapping[str, Any] | None = None) -> list[Execution]:
    """Read a trace file or session export: one ``Execution`` per run (trace) it holds."""
    from canon.gates.contracts.otel import normalize_traces_text

    text = read_text(path, "trace", InputError)
    extra = dict(metadata) if metadata else None
    return normalize_traces_text(text, metadata=extra, source=str(path))


def run_stem(stem: str, trace_id: str) -> str:
    """The record name stem of one run of a file of several: ``<stem>_<trace id>``, with any
    character a file name should not hold (``/``, ``:``, spaces) written as ``_``."""
    return f"{stem}_{_UNSAFE_NAME.sub('_', trace_id)}"


def write_audit_record(record: AuditRecord | Mapping[str, Any], directory: Path, stem: str) -> Path:
    """Store a record as ``<status>_<stem>.json``, adding ``_2``, ``_3``… rather than overwrite."""
    data = record.to_dict() if isinstance(record, AuditRecord) else dict(record)
    status = data.get("verdict", {}).get("status", "error")
    names = (f"{status}_{stem}{'' if n == 1 else f'_{n}'}.json" for n in itertools.count(1))
    return write_new_file(directory, names, dump_json(data).encode("utf-8"))
