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

from canon.gates.contracts.otel.spans import RawSpan


def in_start_order(spans: Sequence[RawSpan]) -> list[RawSpan]:
    """The spans sorted by start time, file order breaking ties."""
    return sorted(spans, key=_start_key)


def _start_key(span: RawSpan) -> tuple[int, int]:
    return span.start_ns, span.position


def choose_root(ordered: Sequence[RawSpan]) -> RawSpan:
    """The root span of spans already in start order (see the module docstring)."""
    known = {span.span_id for span in ordered if span.span_id}
    tops = [span for span in ordered if not span.parent_id or span.parent_id not in known]
    if not tops:
        return ordered[0]
    if len(tops) == 1:
        return tops[0]
    children: dict[str, list[str]] = {}
    for span in ordered:
        if span.parent_id and span.span_id:
            children.setdefault(span.parent_id, []).append(span.span_id)
    best = tops[0]
    best_key = (-1, False)
    # tops are in start order already, so a strict ">" keeps the earliest on ties
    for span in tops:
        key = (_subtree_size(span.span_id, children), not span.parent_id)
        if key > best_key:
            best, best_key = span, key
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
