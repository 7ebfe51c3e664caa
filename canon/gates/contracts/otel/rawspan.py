"""The normalizer's span values: a decoded span, its events, and a run of raw OTLP spans."""

from __future__ import annotations

from typing import Any, NamedTuple

from canon.gates.contracts.execution import StepStatus


class RawEvent(NamedTuple):
    """A span event: its name and decoded attributes."""

    name: str
    attributes: dict[str, Any]


# A NamedTuple rather than a frozen dataclass: one is built per span on the hot path and
# tuple construction is several times cheaper; it never leaves this package.
class RawSpan(NamedTuple):
    """One span, whatever format it came from, with decoded attributes."""

    position: int
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    start_ns: int
    end_ns: int
    status: StepStatus
    attributes: dict[str, Any]
    events: tuple[RawEvent, ...]
    scope: str


class OtlpRun(NamedTuple):
    """Consecutive OTLP JSON spans of one scope, left as parsed JSON until someone reads them.

    Their ids, start times and names, read while telling them apart from other shapes,
    are kept as written, one list each. Read from text with msgspec, the spans are
    ``typed.OtlpSpan`` structs (``typed``); ``as_dict`` gives any of them as JSON.
    """

    scope: str
    spans: list[Any]  # JSON objects (or structs) with "spanId", "startTimeUnixNano", "name"
    first_position: int
    span_ids: list[Any]
    starts: list[Any]
    names: list[Any]
    typed: bool = False  # spans are ``typed.OtlpSpan`` structs, not dicts
