"""The trace formats Canon reads: one reader module per format, one line per format below.

The collector (``spans.py``) asks this table what each JSON object is: the formats that
read objects in that position (a whole document, or an element of an array) and whose
``keys`` the object holds are asked, lowest ``rank`` first; two formats of one rank
claiming one object is a ``TraceError`` naming both, never a guess. The error for a file
that is no trace, and the table in docs/contracts.md, are written from it. Adding a format
is a module (see ``base.TraceFormat`` and docs/development.md) and a line in ``FORMATS``.
"""

from __future__ import annotations

from typing import Any

from canon.gates.contracts.otel.formats import (
    agentcore,
    agentops,
    datadog,
    deepeval,
    envelope,
    grouped,
    jaeger,
    langfuse,
    langsmith,
    log_record,
    openai_agents,
    otel_span,
    otlp,
    otlp_logs,
    otlp_metrics,
    span_list,
    trulens,
    zipkin,
)
from canon.gates.contracts.otel.formats.base import TraceFormat, Where, held_trace

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
    langsmith.FORMAT,
    openai_agents.FORMAT,
    deepeval.FORMAT,
    agentops.FORMAT,
    grouped.FORMAT,
    trulens.FORMAT,
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


class Nested(Exception):  # not an error to show: the collector names the file
    """A one-span format claims an object that also holds spans (or runs, observations,
    traces) under another key, and no container format claims it: a container, not a span."""

    def __init__(self, span: TraceFormat, key: str, held: int) -> None:
        super().__init__(span.name, key, held)
        self.span, self.key, self.held = span, key, held

    def message(self, source: str, path: str) -> str:
        """The ``TraceError`` text for the object at ``path`` of ``source``."""
        return (
            f"{source}: not a trace Canon reads: the object at {path} has the fields of "
            f"{self.span.title} ({self.span.name}) but also holds {self.held} span-like "
            f"object(s) under {self.key!r}, which no format Canon reads takes as a "
            "container; read as one span, its steps would be lost, so Canon does not guess: "
            'export the spans as a list (`{"spans": [...]}`) or in a format docs/contracts.md '
            "names"
        )


class Registry:
    """A table of formats, indexed for asking: per position, by the keys an object holds."""

    __slots__ = ("_at", "expected", "formats")

    def __init__(self, formats: tuple[TraceFormat, ...]) -> None:
        names = [found.name for found in formats]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"trace formats registered twice: {', '.join(twice)}")
        self.formats = formats
        self._at = {where: _Position(formats, where) for where in Where}
        phrases = [found.expected for found in formats if found.expected]
        self.expected = ", ".join(phrases[:-1]) + ", or " + phrases[-1] if phrases else ""

    def at(self, where: Where) -> _Position:
        """The formats read in position ``where``, ready to ask."""
        return self._at[where]

    def recognize(self, raw: dict[str, Any], where: Where) -> TraceFormat | None:
        """The format that claims ``raw`` in position ``where``, or None when none does;
        ``Ambiguous`` when two of one rank claim it."""
        return self._at[where].recognize(raw)


_Ranks = tuple[tuple[TraceFormat, ...], ...]
_MAX_LAYOUTS = 4096  # layouts of keys remembered per position (a file has a handful)
_MAX_KEYS = 64  # keys of the widest layout remembered


class _Position:
    """The formats of one position, found for an object by the keys it holds."""

    __slots__ = ("_by_key", "_layouts", "_order")

    def __init__(self, formats: tuple[TraceFormat, ...], where: Where) -> None:
        self._order = {found.name: at for at, found in enumerate(formats)}
        self._by_key: dict[str, list[TraceFormat]] = {}
        for found in formats:
            if where in found.at:
                for key in found.keys:
                    self._by_key.setdefault(key, []).append(found)
        self._layouts: dict[tuple[str, ...], _Ranks] = {}

    def _ranks(self, layout: tuple[str, ...]) -> _Ranks:
        """The formats an object of these keys could be: by rank, then in table order."""
        seen: dict[str, TraceFormat] = {}
        for key in layout:
            for found in self._by_key.get(key, ()):
                seen.setdefault(found.name, found)
        candidates = sorted(seen.values(), key=lambda found: (found.rank, self._order[found.name]))
        ranks = sorted({found.rank for found in candidates})
        return tuple(tuple(f for f in candidates if f.rank == rank) for rank in ranks)

    def recognize(self, raw: dict[str, Any]) -> TraceFormat | None:
        """The format that claims ``raw``, or None; ``Ambiguous`` when two of one rank do."""
        layout = tuple(raw)
        ranks = self._layouts.get(layout)
        if ranks is None:
            ranks = self._ranks(layout)
            if len(layout) <= _MAX_KEYS:  # a wide object (a metadata map) is not remembered
                if len(self._layouts) >= _MAX_LAYOUTS:
                    self._layouts.clear()
                self._layouts[layout] = ranks
        nested = None
        for rank in ranks:
            found = None
            for candidate in rank:
                if candidate.claims(raw):
                    if found is not None:
                        raise Ambiguous(found, candidate)
                    found = candidate
            if found is not None:
                if found.span_parts is not None:
                    held = held_trace(raw, found.span_parts)
                    if held is not None:  # a container, not a span: a later rank may read it
                        nested = nested or Nested(found, *held)
                        continue
                return found
        if nested is not None:
            raise nested
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
    "Nested",
    "Registry",
    "TraceFormat",
    "Where",
    "formats_table",
]
