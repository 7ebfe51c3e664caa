"""Human labels: a person's answer per artifact and question, read strictly from a file.

One entry per artifact: its id (as in the suite) and labels keyed like a MockJudge script's
ids (``G``, a facet id such as ``honesty``, ``P2``, or a principle's own id). JSON Lines
(``{"id": "a3", "labels": {"G": "no"}}`` a line), YAML (``labels:`` holding a list of such
entries) or CSV (an ``id`` column, then one column per question; an empty cell is no label).
Every problem names the file and the line.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from canon.core.rubric import Question
from canon.errors import InputError
from canon.project.store import loads_strict, parse_yaml, read_text

JSONL_SUFFIXES = (".jsonl", ".ndjson")
CSV_SUFFIXES = (".csv",)
_ENTRY_KEYS = frozenset({"id", "labels"})


@dataclass(frozen=True, slots=True)
class LabelSet:
    """The labels of one file: artifact key -> question id -> the choice a person gave."""

    source: str
    labels: Mapping[str, Mapping[str, str]]

    @property
    def count(self) -> int:
        """How many (artifact, question) labels the file holds."""
        return sum(len(row) for row in self.labels.values())


@dataclass(frozen=True, slots=True)
class _Entry:
    line: int
    ident: object
    labels: object


def read_labels(
    path: Path, questions: Sequence[Question], keys: Sequence[str], *, shown: str | None = None
) -> LabelSet:
    """Read a labels file and check it against the suite's artifact keys and the questions.

    ``shown`` is the file's name in messages (as the user would type it); the path by default.
    """
    suffix = path.suffix.lower()
    text = read_text(path, "labels file").removeprefix("\ufeff")
    source = shown or str(path)
    if suffix in JSONL_SUFFIXES:
        entries = _jsonl_entries(text, source)
    elif suffix in CSV_SUFFIXES:
        entries = _csv_entries(text, source)
    else:
        entries = _yaml_entries(text, source)
    if not entries:
        raise InputError(f"{source}: the labels file holds no entries")
    return resolve_labels(entries, questions, keys, source=source)


def resolve_labels(
    entries: Sequence[_Entry], questions: Sequence[Question], keys: Sequence[str], *, source: str
) -> LabelSet:
    """Check raw entries against the suite and rubric; canonical ids and labels out."""
    by_key: dict[str, Question] = {}
    for question in questions:
        if question.principle is not None:
            by_key.setdefault(question.principle, question)
    by_key.update({q.id: q for q in questions})  # an id wins over a principle id
    known = set(keys)
    labels: dict[str, dict[str, str]] = {}
    lines: dict[str, int] = {}
    for entry in entries:
        where = f"{source}: line {entry.line}"
        ident = entry.ident
        if not isinstance(ident, str) or not ident.strip():
            raise InputError(f"{where}: 'id' must be the artifact's id, as in the suite")
        if ident not in known:
            raise InputError(f"{where}: no artifact {ident!r} in the suite; label suite artifacts")
        if ident in lines:
            raise InputError(
                f"{where}: artifact {ident!r} is labelled again (first: line {lines[ident]})"
            )
        lines[ident] = entry.line
        if not isinstance(entry.labels, Mapping) or not entry.labels:
            raise InputError(
                f"{where}: 'labels' must map question ids (G, a facet, P1, a principle id) "
                "to answers"
            )
        row: dict[str, str] = {}
        for raw_key, raw_label in entry.labels.items():
            asked = by_key.get(raw_key) if isinstance(raw_key, str) else None
            if asked is None:
                offered = ", ".join(sorted(by_key))
                raise InputError(
                    f"{where}: unknown question {raw_key!r}; expected one of {offered}"
                )
            if asked.id in row:
                raise InputError(f"{where}: question {asked.id} is labelled twice")
            row[asked.id] = _label(asked, raw_label, where)
        labels[ident] = row
    return LabelSet(source, labels)


def _label(question: Question, raw: object, where: str) -> str:
    if isinstance(raw, bool):  # YAML reads a bare yes/no as a boolean
        raw = "yes" if raw else "no"
    choice = question.choice(raw) if isinstance(raw, str) else None
    if choice is None:
        offered = ", ".join(c.label for c in question.choices)
        raise InputError(f"{where}: {raw!r} is not an answer to {question.id}; expected {offered}")
    return choice.label


def _jsonl_entries(text: str, path: str) -> list[_Entry]:
    entries: list[_Entry] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = loads_strict(line)
        except ValueError as exc:
            raise InputError(f"{path}: line {number} is not valid JSON: {exc}") from None
        entries.append(_entry(item, number, path))
    return entries


def _entry(item: object, line: int, path: str) -> _Entry:
    if not isinstance(item, Mapping) or set(item) != _ENTRY_KEYS:
        got = sorted(map(str, item)) if isinstance(item, Mapping) else type(item).__name__
        raise InputError(f"{path}: line {line}: an entry has exactly 'id' and 'labels', got {got}")
    return _Entry(line, item["id"], item["labels"])


def _yaml_entries(text: str, path: str) -> list[_Entry]:
    data = parse_yaml(text, path)
    if (
        not isinstance(data, Mapping)
        or set(data) != {"labels"}
        or not isinstance(data["labels"], list)
    ):
        raise InputError(f"{path}: a labels file is a mapping with one key, 'labels' (a list)")
    # The strict parse above validated the file; composing it again only finds the lines.
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    items = root.value[0][1].value if isinstance(root, yaml.MappingNode) else []
    return [
        _entry(item, node.start_mark.line + 1, path)
        for item, node in zip(data["labels"], items, strict=True)
    ]


def _csv_entries(text: str, path: str) -> list[_Entry]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: list[tuple[int, list[str]]] = []
    start = 1
    try:
        for row in reader:
            rows.append((start, row))  # a quoted cell may span lines: name the row's first
            start = reader.line_num + 1
    except csv.Error as exc:
        raise InputError(f"{path}: line {reader.line_num}: not valid CSV: {exc}") from None
    if not rows or not rows[0][1] or rows[0][1][0] != "id":
        raise InputError(f"{path}: line 1: a CSV labels file's header starts with 'id'")
    header = rows[0][1]
    if len(set(header)) != len(header):
        raise InputError(f"{path}: line 1: a column is named twice")
    entries: list[_Entry] = []
    for number, row in rows[1:]:
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise InputError(
                f"{path}: line {number} has {len(row)} cell(s); the header has {len(header)}"
            )
        cells = dict(zip(header[1:], row[1:], strict=True))
        entries.append(_Entry(number, row[0], {k: v for k, v in cells.items() if v != ""}))
    return entries
