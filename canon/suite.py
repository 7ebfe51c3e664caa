"""Suites: the YAML file listing the artifacts a run scores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from canon.core.artifact import Artifact
from canon.errors import InputError
from canon.gates.policy import MAX_INPUT_BYTES, PolicyError, decode_json_bytes
from canon.store import read_bytes, read_yaml

_ENTRY_KEYS = frozenset({"id", "text", "response", "trace"})


def read_suite(path: Path, *, roots: Sequence[Path] | None = None) -> tuple[Artifact, ...]:
    """Read a suite file: ``artifacts:`` entries with ``text`` and optional
    ``id``, ``response`` (inline JSON value or a .json path) and ``trace`` (a .json path).

    With ``roots``, every response and trace file must resolve (symlinks followed) inside
    one of those directories: a suite from an untrusted change cannot read the machine.
    """
    data = read_yaml(path, "suite")
    if not isinstance(data, Mapping) or set(data) != {"artifacts"}:
        raise InputError(f"{path}: a suite is a mapping with one key, 'artifacts' (a list)")
    entries = data["artifacts"]
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{path}: 'artifacts' must be a non-empty list")
    inside = None if roots is None else tuple(root.resolve() for root in roots)
    artifacts = tuple(_entry(item, index, path, inside) for index, item in enumerate(entries, 1))
    seen: dict[str, int] = {}
    for index, artifact in enumerate(artifacts, 1):
        if artifact.key in seen:
            raise InputError(
                f"{path}: artifact {index} has the same key {artifact.key!r} as artifact "
                f"{seen[artifact.key]}; give each a distinct 'id' or text"
            )
        seen[artifact.key] = index
    return artifacts


def _entry(item: object, index: int, suite: Path, roots: tuple[Path, ...] | None) -> Artifact:
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
    response = item.get("response")
    # A string ending in .json names a file; anything else is the structured response itself.
    if isinstance(response, str) and response.endswith(".json"):
        response = _response_file(_inside(suite.parent / response, roots, where, "response"))
    trace = item.get("trace")
    if trace is not None:
        if not isinstance(trace, str) or not trace.strip():
            raise InputError(f"{where}: 'trace' must be the path of a trace file")
        trace = _inside(suite.parent / trace, roots, where, "trace")
    return Artifact(text=text, response=response, trace=trace, id=ident)


def _inside(path: Path, roots: tuple[Path, ...] | None, where: str, key: str) -> Path:
    if roots is None:
        return path
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop before Python 3.13
        raise InputError(f"{where}: {key} {path} cannot be resolved: {exc}") from None
    if any(resolved.is_relative_to(root) for root in roots):
        return path
    raise InputError(
        f"{where}: {key} {path} resolves to {resolved}, outside the project "
        f"({', '.join(map(str, roots))}); move the file into the project or set "
        "'allow_outside_paths: true' in canon.yaml"
    )


def _response_file(path: Path) -> Any:
    # Decoded exactly as `canon policy evaluate` decodes a response: duplicate members,
    # non-finite numbers and anything over the policy gate's size limit are refused.
    data = read_bytes(path, "response", limit=MAX_INPUT_BYTES)
    try:
        return decode_json_bytes(data, what=f"{path}: response")
    except PolicyError as exc:
        raise InputError(exc.message) from None
