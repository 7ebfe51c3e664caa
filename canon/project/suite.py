"""Suites: the YAML, JSON Lines or CSV file listing the artifacts a run scores."""

from __future__ import annotations

import csv
import fnmatch
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from canon.core.artifact import Artifact, context_from, input_from
from canon.errors import CanonError, InputError
from canon.gates.policy import MAX_INPUT_BYTES, PolicyError, decode_json_bytes
from canon.project.store import loads_strict, read_bytes, read_text, read_yaml

_ENTRY_KEYS = frozenset({"id", "text", "input", "context", "response", "trace"})
JSONL_SUFFIXES = (".jsonl", ".ndjson")
CSV_SUFFIXES = (".csv",)
# how a CSV response cell that is JSON itself opens; any other cell is a JSON file's path
_INLINE_JSON = ("{", "[")


def read_suite(path: Path, *, roots: Sequence[Path] | None = None) -> tuple[Artifact, ...]:
    """Read a suite file: entries with ``text`` and optional ``id``, ``input`` (the request
    the text answers: text, or a list of ``{role, content}`` messages), ``context`` (text or
    a list of texts the agent worked from), ``response`` (an inline value, or a string: the
    path of a JSON file) and ``trace`` (a trace file's path).

    YAML holds them under ``artifacts:``; a ``.jsonl`` file has one per line; a ``.csv``
    file has a header row naming the columns. With ``roots``, every response and trace file
    must resolve (symlinks followed) inside one of those directories: a suite from an
    untrusted change cannot read the machine.
    """
    suffix = path.suffix.lower()
    if suffix in JSONL_SUFFIXES:
        entries = _jsonl_entries(path)
    elif suffix in CSV_SUFFIXES:
        entries = _csv_entries(path)
    else:
        entries = _yaml_entries(path)
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
    texts = _texts(item.get("text"), where)
    ident = item.get("id")
    if ident is not None and (not isinstance(ident, str) or not ident.strip()):
        raise InputError(f"{where}: 'id' must be non-empty text")
    if len(texts) > 1 and ident is None:
        # the key of a text-only entry is a digest of its text: replicates need a stable id
        raise InputError(f"{where}: an entry with several responses in 'text' needs an 'id'")
    response = item.get("response")
    # A string always names a JSON file, whatever its name (a typo such as dup.jsn is a file
    # not found, never text taken for the response); an inline response is the structure.
    if isinstance(response, str):
        if not response.strip():
            raise InputError(f"{where}: 'response' must be the path of a JSON file, or inline")
        path = _inside(suite.parent / response, roots, where, "response")
        response = _response_file(path, f"{where}: response file")
    trace = item.get("trace")
    if trace is not None:
        if not isinstance(trace, str) or not trace.strip():
            raise InputError(f"{where}: 'trace' must be the path of a trace file")
        trace = _inside(suite.parent / trace, roots, where, "trace")
    given = item.get("input")
    request = None if given is None else input_from(given, where)
    if request is None and isinstance(trace, Path):
        request = _trace_request(trace)
    context = context_from(item.get("context", ()), where)
    return Artifact(
        texts[0],
        response=response,
        trace=trace,
        id=ident,
        replicates=texts[1:],
        input=request,
        context=context,
    )


def _trace_request(path: Path) -> str | None:
    """The request a trace records (its root's input), for an entry that gives no ``input``;
    None when the file holds no single run with one. A file that is no trace is left to the
    contract gate, which refuses it naming the file (exit 2) when a contract reads it."""
    from canon.project.contract_files import read_trace_runs

    try:
        runs = read_trace_runs(path)
    except CanonError:
        return None
    requests = [run.input_text for run in runs if run.input_text and run.input_text.strip()]
    return requests[0] if len(runs) == 1 and len(requests) == 1 else None


def _texts(value: object, where: str) -> tuple[str, ...]:
    """An entry's response, or its several responses (replicates: repeated agent runs)."""
    if isinstance(value, str) and value.strip():
        return (value,)
    if isinstance(value, list) and value:
        for index, text in enumerate(value, 1):
            if not isinstance(text, str) or not text.strip():
                raise InputError(f"{where}: response {index} in 'text' must be non-empty text")
        return tuple(value)
    raise InputError(f"{where}: 'text' must be non-empty text, or a list of them (replicates)")


def _yaml_entries(path: Path) -> list[Any]:
    data = read_yaml(path, "suite")
    if not isinstance(data, Mapping) or set(data) != {"artifacts"}:
        raise InputError(f"{path}: a suite is a mapping with one key, 'artifacts' (a list)")
    entries = data["artifacts"]
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{path}: 'artifacts' must be a non-empty list")
    return entries


def _jsonl_entries(path: Path) -> list[Any]:
    """One JSON object (or string) per line; blank lines are allowed and ignored."""
    entries: list[Any] = []
    for number, line in enumerate(read_text(path, "suite").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entries.append(loads_strict(line))
        except ValueError as exc:
            raise InputError(f"{path}: line {number} is not valid JSON: {exc}") from None
    if not entries:
        raise InputError(f"{path}: the suite has no artifacts (expected one JSON object a line)")
    return entries


def _csv_entries(path: Path) -> list[Any]:
    """A header row naming columns (``text`` required), then one artifact per row; an
    ``input`` or ``context`` cell is one text."""
    text = read_text(path, "suite").removeprefix("\ufeff")  # spreadsheets often add a BOM
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    try:
        header = reader.fieldnames
        rows = list(reader)
    except csv.Error as exc:
        raise InputError(f"{path}: not valid CSV: {exc} (line {reader.line_num})") from None
    if not header:
        raise InputError(f"{path}: a CSV suite needs a header row naming its columns")
    unknown = [name for name in header if name not in _ENTRY_KEYS]
    if unknown or len(set(header)) != len(header) or "text" not in header:
        raise InputError(
            f"{path}: the CSV header must name each of {', '.join(sorted(_ENTRY_KEYS))} at "
            f"most once and include 'text', got {', '.join(map(repr, header))}"
        )
    entries: list[Any] = []
    for number, row in enumerate(rows, 2):
        if None in row:  # csv puts surplus cells under the key None
            raise InputError(f"{path}: line {number} has more cells than the header has columns")
        # An empty cell is an absent value, so one file can mix rows with and without traces.
        entry = {key: value for key, value in row.items() if value not in (None, "")}
        # a cell is inline JSON when it opens an object or array, and a file's path otherwise
        if "response" in entry and entry["response"].lstrip().startswith(_INLINE_JSON):
            entry["response"] = _csv_json(entry["response"], path, number)
        entries.append(entry)
    if not entries:
        raise InputError(f"{path}: the suite has no artifacts (a header row and no data rows)")
    return entries


def _csv_json(cell: str, path: Path, line: int) -> Any:
    try:
        return loads_strict(cell)
    except ValueError as exc:
        raise InputError(
            f"{path}: line {line}: 'response' opens with {cell.lstrip()[0]} so it is inline "
            f"JSON, and it is not valid: {exc}"
        ) from None


def select_artifacts(
    artifacts: Sequence[Artifact],
    patterns: Sequence[str] = (),
    limit: int | None = None,
    *,
    source: Path | str = "the suite",
) -> tuple[Artifact, ...]:
    """The artifacts whose key matches any pattern (an exact key or a glob), in suite
    order, then at most ``limit`` of them; a pattern that matches nothing is an error."""
    chosen = tuple(artifacts)
    if patterns:
        keys = [a.key for a in chosen]
        unmatched = [p for p in patterns if not any(_matches(k, p) for k in keys)]
        if unmatched:
            shown = ", ".join(keys[:5]) + (", ..." if len(keys) > 5 else "")
            raise InputError(
                f"{source}: --select {', '.join(map(repr, unmatched))} matches no artifact; "
                f"its keys are {shown}"
            )
        chosen = tuple(a for a in chosen if any(_matches(a.key, p) for p in patterns))
    if limit is not None:
        if limit < 1:
            raise InputError(f"--limit must be a whole number >= 1, got {limit}")
        chosen = chosen[:limit]
    return chosen


def _matches(key: str, pattern: str) -> bool:
    # the exact key first: a key may hold glob characters such as [ or *
    return key == pattern or fnmatch.fnmatchcase(key, pattern)


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


def _response_file(path: Path, what: str) -> Any:
    # Decoded exactly as `canon policy evaluate` decodes a response: duplicate members,
    # non-finite numbers and anything over the policy gate's size limit are refused.
    data = read_bytes(path, what, limit=MAX_INPUT_BYTES)
    try:
        return decode_json_bytes(data, what=f"{path}: response")
    except PolicyError as exc:
        raise InputError(exc.message) from None
