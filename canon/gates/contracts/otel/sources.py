"""The spans behind an execution's steps, by file position, and the framework they name.

OTLP JSON spans (dicts, or ``typed`` structs) stay as parsed until something asks for one
decoded: the root's request and answer, a run id, or framework detection, which looks at
a span's keys alone where they cannot name a framework.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import chain, repeat
from operator import itemgetter
from typing import Any

from canon.gates.contracts.otel.attributes import KVAttributes
from canon.gates.contracts.otel.formats.otlp import otlp_raw_span
from canon.gates.contracts.otel.frameworks import (
    DETECT_KEYS,
    NAME_MARKS,
    STRONG_KEYS,
    FrameworkDetector,
    name_marks,
    weak_mark,
)
from canon.gates.contracts.otel.rawspan import OtlpRun, RawSpan
from canon.gates.contracts.otel.values import decode_kv_list, normalize_id

_KEY = itemgetter("key")
_ATTRIBUTES = itemgetter("attributes")
# attribute keys of a span, as written -> (may name a framework, the convention they name)
_Layouts = dict[tuple[Any, ...], tuple[bool, str]]


class SpanSources:
    """The spans behind the steps, by file position; OTLP JSON ones decode on request."""

    __slots__ = ("_decoded", "_run_starts", "_runs")

    def __init__(self, entries: list[RawSpan | OtlpRun]) -> None:
        self._runs = [entry for entry in entries if isinstance(entry, OtlpRun)]
        self._run_starts = [run.first_position for run in self._runs]
        self._decoded = {entry.position: entry for entry in entries if isinstance(entry, RawSpan)}

    @property
    def runs(self) -> list[OtlpRun]:
        """The runs of plain OTLP spans, in file order."""
        return self._runs

    @property
    def decoded_spans(self) -> int:
        """How many spans were decoded while reading (not plain OTLP JSON)."""
        return len(self._decoded)

    def _locate(self, position: int) -> tuple[OtlpRun | None, int]:
        """The run holding ``position`` and the offset in it, or ``(None, position)``."""
        at = bisect_right(self._run_starts, position) - 1
        if at >= 0:
            run = self._runs[at]
            offset = position - run.first_position
            if offset < len(run.spans):
                return run, offset
        return None, position

    def decoded(self, position: int) -> RawSpan:
        """The span at file ``position``, fully decoded."""
        run, offset = self._locate(position)
        if run is not None:
            return otlp_raw_span(run.spans[offset], run.scope, position)
        return self._decoded[position]

    def observe(self, position: int, detector: FrameworkDetector, layouts: _Layouts) -> None:
        """Show the span at file ``position`` to ``detector``, decoding only what it needs.

        A plain OTLP span whose scope, name and attribute keys cannot name a framework
        (only a convention) is passed by its keys alone; its layout of keys is looked at
        once per file.
        """
        run, offset = self._locate(position)
        if run is None:
            span = self._decoded[position]
            detector.observe(span.name, span.scope, span.attributes)
            return
        span_json = run.spans[offset]
        if run.typed:
            span_json = span_json.as_dict()
        name = span_json.get("name")
        name = name if isinstance(name, str) else ""
        items = span_json.get("attributes")
        if items.__class__ is list and not detector.scope_hint(run.scope) and not name_marks(name):
            try:
                keys = tuple(map(_KEY, items))
                found = layouts.get(keys)
                if found is None:
                    present = set(keys)
                    found = layouts[keys] = (
                        not STRONG_KEYS.isdisjoint(present),
                        weak_mark(present),
                    )
            except (TypeError, KeyError):
                found = (True, "")  # a malformed list: the careful reading below
            if not found[0]:
                if found[1]:
                    detector.observe_weak(found[1])
                return
        attrs = (
            KVAttributes(items).subset(DETECT_KEYS)
            if items.__class__ is list
            else decode_kv_list(items)
        )
        detector.observe(name, run.scope, attrs)

    def trace_id(self, position: int) -> str:
        """The trace id of the span at file ``position``."""
        run, offset = self._locate(position)
        if run is None:
            return self.decoded(position).trace_id
        return normalize_id(run.spans[offset].get("traceId"), 32)


def framework(spans: SpanSources, order: list[int]) -> str:
    detector = FrameworkDetector()
    flat = _conventions_only(spans, detector)
    if flat is not None:
        # no span can name a framework: the convention of the earliest span that has one
        for original in order:
            span = flat[original]
            if span.__class__ is dict:
                keys = set(map(_KEY, span["attributes"]))
            else:
                from canon.gates.contracts.otel.typed import attribute_keys

                keys = set(attribute_keys(span))
            mark = weak_mark(keys)
            if mark:
                return mark
        return detector.result()
    layouts: _Layouts = {}
    for original in order:
        spans.observe(original, detector, layouts)
        if detector.done:
            break
    return detector.result()


def _conventions_only(spans: SpanSources, detector: FrameworkDetector) -> list[Any] | None:
    """Every span in file order, when no span can name a framework; else None.

    That is a file of plain OTLP runs whose scopes, span names and attribute keys hold no
    framework mark (generic GenAI traces), checked with C-level passes over whole runs.
    """
    if spans.decoded_spans:
        return None
    flat: list[Any] = []
    for run in spans.runs:
        if detector.scope_hint(run.scope):
            return None
        try:
            if run.typed:
                from canon.gates.contracts.otel.typed import all_attribute_keys, field_column

                names: list[Any] = field_column(run.spans, "name")
                joined = "\x00" + "\x00".join(names) + "\x00"
                keys = all_attribute_keys(run.spans)
            else:
                names = list(map(dict.get, run.spans, repeat("name")))
                joined = "\x00" + "\x00".join(names) + "\x00"
                keys = set(map(_KEY, chain.from_iterable(map(_ATTRIBUTES, run.spans))))
        except (TypeError, KeyError):
            return None  # a name that is not text, a span without a list: the careful road
        if "[any_agent]\x00" in joined or "\x00claude_code." in joined:
            return None
        if not NAME_MARKS.isdisjoint(names) or not STRONG_KEYS.isdisjoint(keys):
            return None
        flat += run.spans
    return flat
