"""Suites: the YAML file listing the artifacts a run scores."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from canon.core.artifact import Artifact
from canon.errors import InputError
from canon.store import read_json, read_yaml

_ENTRY_KEYS = frozenset({"id", "text", "response", "trace"})


def read_suite(path: Path) -> tuple[Artifact, ...]:
    """Read a suite file: ``artifacts:`` entries with ``text`` and optional
    ``id``, ``response`` (inline JSON value or a .json path) and ``trace`` (a .json path)."""
    data = read_yaml(path, "suite")
    if not isinstance(data, Mapping) or set(data) != {"artifacts"}:
        raise InputError(f"{path}: a suite is a mapping with one key, 'artifacts' (a list)")
    entries = data["artifacts"]
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{path}: 'artifacts' must be a non-empty list")
    artifacts = tuple(_entry(item, index, path) for index, item in enumerate(entries, 1))
    seen: dict[str, int] = {}
    for index, artifact in enumerate(artifacts, 1):
        if artifact.key in seen:
            raise InputError(
                f"{path}: artifact {index} has the same key {artifact.key!r} as artifact "
                f"{seen[artifact.key]}; give each a distinct 'id' or text"
            )
        seen[artifact.key] = index
    return artifacts


def _entry(item: object, index: int, suite: Path) -> Artifact:
    where = f"{suite}: artifact {index}"
    if isinstance(item, str):
        item = {"text": item}
    if not isinstance(item, Mapping):
        raise InputError(f"{where} must be text or a mapping with 'text'")
    unknown = sorted(str(k) for k in item if k not in _ENTRY_KEYS)
    if unknown:
        raise InputError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; "
            f"expected {', '.join(sorted(_ENTRY_KEYS))}"
        )
    text = item.get("text")
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{where}: 'text' must be non-empty text")
    ident = item.get("id")
    if ident is not None and (not isinstance(ident, str) or not ident.strip()):
        raise InputError(f"{where}: 'id' must be non-empty text")
    response = _json_value(item.get("response"), suite.parent, f"{where} response")
    trace = item.get("trace")
    if trace is not None:
        if not isinstance(trace, str):
            raise InputError(f"{where}: 'trace' must be the path of a trace file")
        trace = suite.parent / trace
    return Artifact(text=text, response=response, trace=trace, id=ident)


def _json_value(value: Any, base: Path, what: str) -> Any:
    # A string ending in .json names a file; anything else is the structured response itself.
    if isinstance(value, str) and value.endswith(".json"):
        return read_json(base / value, what)
    return value
