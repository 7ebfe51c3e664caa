"""Event tables written as CSV: TruLens's event records (one span a row), as
``pandas.DataFrame.to_csv`` writes the table TruLens reads its spans from.

A file is such a table when its first line is a CSV header naming ``record``,
``record_attributes`` and ``trace`` columns; each row becomes an object of its cells (the
unnamed index column dropped), read by the ``trulens`` format (``formats/trulens.py``),
which also reads the same rows as JSON lines. A row whose cells do not match the header
refuses the file, naming the line.
"""

from __future__ import annotations

import csv
import io
from operator import itemgetter

from canon.gates.contracts.otel.errors import TraceError

_COLUMNS = frozenset({"record", "record_attributes", "trace"})
_MAX_FIELD = 64 * 1024 * 1024  # a cell as large as a span's attributes can be


def is_event_table(text: str) -> bool:
    """Whether ``text`` starts with the CSV header of an event table."""
    header = text.lstrip("\ufeff").split("\n", 1)[0].strip().lower()
    if header.startswith(("{", "[")):
        return False
    return _COLUMNS.issubset(cell.strip() for cell in header.split(","))


def event_table_rows(text: str, source: str) -> list[dict[str, str]]:
    """The rows of an event table as objects of their cells, in file order."""
    csv.field_size_limit(max(csv.field_size_limit(), _MAX_FIELD))
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    try:
        header = [cell.strip().lower() for cell in next(reader)]
        # the named columns (pandas writes its index unnamed first), picked in C per row
        named = [at for at, key in enumerate(header) if key]
        keys = [header[at] for at in named]
        cells = itemgetter(*named) if len(named) > 1 else None
        rows = []
        for row in reader:
            if not "".join(row).strip():  # a blank row: no cell holds anything
                continue
            if len(row) != len(header):
                raise TraceError(
                    f"{source}: not a trace: line {reader.line_num} of the event table has "
                    f"{len(row)} cells where its header names {len(header)}"
                )
            if cells is None:
                rows.append({key: cell for key, cell in zip(header, row, strict=True) if key})
            else:
                rows.append(dict(zip(keys, cells(row), strict=True)))
    except csv.Error as exc:
        raise TraceError(f"{source}: not a trace: an event table that is no CSV: {exc}") from None
    return rows
