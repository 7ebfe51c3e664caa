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

from collections.abc import Callable, Sequence
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


def repeated_tool_calls(
    names: Sequence[str],
    kinds: Sequence[str],
    span_ids: Sequence[str],
    parent_ids: Sequence[str],
    intervals: Callable[[int], tuple[int, int]],
) -> list[int]:
    """Positions (start order) of tool-call spans that repeat an earlier call of the same tool.

    Two spans of one call: an MCP request under the tool span that sent it (Monocle), or two
    instrumentations recording it in trees of their own (ADK's spans beside Monocle's), which
    then overlap in time. Parallel calls of one tool in one tree are separate calls.
    ``intervals(position)`` gives a span's ``(start, end)``; it is asked only for repeats.
    """
    seen: dict[str, list[int]] = {}
    for position, kind in enumerate(kinds):
        if kind == "tool_call":
            seen.setdefault(names[position], []).append(position)
    groups = [positions for positions in seen.values() if len(positions) > 1]
    if not groups:
        return []
    at = {span_id: position for position, span_id in enumerate(span_ids) if span_id}
    repeats: list[int] = []
    for positions in groups:
        kept: list[int] = []
        for position in positions:
            if any(_same_call(earlier, position, at, parent_ids, intervals) for earlier in kept):
                repeats.append(position)
            else:
                kept.append(position)
    return sorted(repeats)


def _same_call(
    first: int,
    second: int,
    at: dict[str, int],
    parent_ids: Sequence[str],
    intervals: Callable[[int], tuple[int, int]],
) -> bool:
    chain_first = _ancestors(first, at, parent_ids)
    chain_second = _ancestors(second, at, parent_ids)
    if first in chain_second or second in chain_first:
        return True
    if chain_first[-1] == chain_second[-1]:
        return False  # one tree: parallel calls of the same tool
    start_a, end_a = intervals(first)
    start_b, end_b = intervals(second)
    return start_a <= max(end_b, start_b) and start_b <= max(end_a, start_a)


def _ancestors(position: int, at: dict[str, int], parent_ids: Sequence[str]) -> list[int]:
    """``position`` and its ancestors in the file, nearest first (the top span last)."""
    chain = [position]
    seen = {position}
    while True:
        parent = at.get(parent_ids[chain[-1]])
        if parent is None or parent in seen:
            return chain
        chain.append(parent)
        seen.add(parent)
