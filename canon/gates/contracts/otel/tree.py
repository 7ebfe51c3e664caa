"""Span order and the choice of the root span.

Order: steps run in start-time order; spans that start at the same instant (or carry no
time at all) keep the order they have in the file.

Root: the candidates are the *top* spans, i.e. spans without a parent id and spans whose
parent is not in the file (a partial export that lost its root). The root is the candidate
with the largest subtree; ties go to a span without a parent id, then to the earliest start,
then to file order. So a lone health-check or ``create_agent`` span next to the real
``invoke_agent`` tree never wins, and a partial trace takes the biggest surviving subtree.
If every span has a parent in the file (a cycle), the earliest span is the root. The root
is only where the run's request, answer and id are looked up first: it stays a step.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress
from operator import not_

from canon.gates.contracts.otel.spans import RawSpan


def in_start_order(spans: Sequence[RawSpan]) -> list[RawSpan]:
    """The spans sorted by start time, file order breaking ties."""
    return sorted(spans, key=_start_key)


def _start_key(span: RawSpan) -> tuple[int, int]:
    return span.start_ns, span.position


def choose_root(ordered: Sequence[RawSpan]) -> RawSpan:
    """The root span of spans already in start order (see the module docstring)."""
    span_ids = [span.span_id for span in ordered]
    parent_ids = [span.parent_id for span in ordered]
    return ordered[root_position(span_ids, parent_ids)]


def root_position(span_ids: Sequence[str], parent_ids: Sequence[str]) -> int:
    """Position of the root among spans in start order, given their span and parent ids."""
    known = set(span_ids)
    known.discard("")
    # a span is a top when its parent id is empty or names no span in the file
    tops = list(compress(range(len(parent_ids)), map(not_, map(known.__contains__, parent_ids))))
    if not tops:
        return 0
    if len(tops) == 1:
        return tops[0]
    children: dict[str, list[str]] = {}
    for span_id, parent_id in zip(span_ids, parent_ids, strict=True):
        if parent_id and span_id:
            children.setdefault(parent_id, []).append(span_id)
    best = tops[0]
    best_key = (-1, False)
    # tops are in start order already, so a strict ">" keeps the earliest on ties
    for position in tops:
        key = (_subtree_size(span_ids[position], children), not parent_ids[position])
        if key > best_key:
            best, best_key = position, key
    return best


def _subtree_size(span_id: str, children: dict[str, list[str]]) -> int:
    if not span_id:
        return 0
    seen = {span_id}
    stack = [span_id]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return len(seen) - 1
