"""The trace formats Canon reads: one reader module per format, one line per format below.

The collector (``spans.py``) asks this table what each JSON object is: every format that
reads objects in that position (a whole document, or an element of an array) is asked,
lowest ``rank`` first; two formats of one rank claiming one object is a ``TraceError``
naming both, never a guess. The error for a file that is no trace, and the table in
docs/contracts.md, are written from it. Adding a format is a module (see
``base.TraceFormat`` and docs/development.md) and a line in ``FORMATS``.
"""

from __future__ import annotations

from typing import Any

from canon.gates.contracts.otel.formats import (
    agentcore,
    datadog,
    envelope,
    jaeger,
    langfuse,
    log_record,
    otel_span,
    otlp,
    otlp_logs,
    otlp_metrics,
    span_list,
    zipkin,
)
from canon.gates.contracts.otel.formats.base import TraceFormat, Where

FORMATS: tuple[TraceFormat, ...] = (
    otlp.FORMAT,
    otlp_logs.FORMAT,
    otlp_metrics.FORMAT,
    log_record.FORMAT,
    jaeger.QUERY,
    jaeger.TRACE,
    jaeger.SPAN,
    span_list.FORMAT,
    langfuse.FORMAT,
    datadog.FORMAT,
    zipkin.FORMAT,
    agentcore.FORMAT,
    otel_span.FORMAT,
    envelope.FORMAT,
)


class Ambiguous(Exception):  # not an error to show: the collector names the file
    """Two formats of one rank claim one object."""

    def __init__(self, first: TraceFormat, second: TraceFormat) -> None:
        super().__init__(first.name, second.name)
        self.first, self.second = first, second

    def message(self, source: str, path: str) -> str:
        """The ``TraceError`` text for the object at ``path`` of ``source``."""
        return (
            f"{source}: the object at {path} reads as both {self.first.title} "
            f"({self.first.name}) and {self.second.title} ({self.second.name}); Canon does not "
            "guess which: export it in one of the two formats"
        )


class Registry:
    """A table of formats, sorted for asking: per position, the formats of each rank."""

    __slots__ = ("_ranks", "expected", "formats")

    def __init__(self, formats: tuple[TraceFormat, ...]) -> None:
        names = [found.name for found in formats]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"trace formats registered twice: {', '.join(twice)}")
        self.formats = formats
        self._ranks = {
            where: [
                tuple(found for found in formats if where in found.at and found.rank == rank)
                for rank in sorted({found.rank for found in formats if where in found.at})
            ]
            for where in Where
        }
        phrases = [found.expected for found in formats if found.expected]
        self.expected = ", ".join(phrases[:-1]) + ", or " + phrases[-1] if phrases else ""

    def recognize(self, raw: dict[str, Any], where: Where) -> TraceFormat | None:
        """The format that claims ``raw`` in position ``where``, or None when none does;
        ``Ambiguous`` when two of one rank claim it."""
        for rank in self._ranks[where]:
            found = None
            for candidate in rank:
                if candidate.claims(raw):
                    if found is not None:
                        raise Ambiguous(found, candidate)
                    found = candidate
            if found is not None:
                return found
        return None


def formats_table(formats: tuple[TraceFormat, ...] = FORMATS) -> str:
    """The Markdown table of formats that docs/contracts.md shows (a test keeps them equal)."""
    rows = ["| format | shape | tested on recordings from |", "|---|---|---|"]
    rows += [f"| {found.title} | {found.shape} | {found.learned_from} |" for found in formats]
    return "\n".join(rows) + "\n"


REGISTRY = Registry(FORMATS)

__all__ = [
    "FORMATS",
    "REGISTRY",
    "Ambiguous",
    "Registry",
    "TraceFormat",
    "Where",
    "formats_table",
]
