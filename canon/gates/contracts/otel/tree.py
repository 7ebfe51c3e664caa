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

from canon.gates.contracts.otel.rawspan import RawSpan


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


def top_positions(span_ids: Sequence[str], parent_ids: Sequence[str]) -> list[int]:
    """Positions of the top spans: those whose parent id is empty or names no span in the file."""
    known = set(span_ids)
    known.discard("")
    orphans = set(parent_ids) - known  # the parent ids naming no span, "" among them
    if len(orphans) == 1:
        (orphan,) = orphans
        if parent_ids.count(orphan) == 1:  # one tree, the usual file: no pass to build a list
            return [parent_ids.index(orphan)]
    return list(compress(range(len(parent_ids)), map(orphans.__contains__, parent_ids)))


def root_position(
    span_ids: Sequence[str], parent_ids: Sequence[str], tops: list[int] | None = None
) -> int:
    """Position of the root among spans in start order, given their span and parent ids.

    ``tops`` are their ``top_positions``, when the caller has them already.
    """
    if tops is None:
        tops = top_positions(span_ids, parent_ids)
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
    tops: list[int] | None = None,
) -> list[int]:
    """Positions (start order) of tool-call spans that repeat a call of the same tool.

    Two spans of one call: an MCP request right under the tool span that sent it (Monocle:
    its child, or grandchild through a session span), or two instrumentations recording it
    in trees of their own (ADK's spans beside Monocle's), which then overlap in time.
    Parallel calls of one tool in one tree are separate calls. ``intervals(position)``
    gives a span's ``(start, end)``; it is asked only when the file holds several trees.
    ``tops`` are the spans' ``top_positions``, when the caller has them already.
    """
    tools = list(compress(range(len(kinds)), map("tool_call".__eq__, kinds)))
    called = list(map(names.__getitem__, tools))
    if len(set(called)) == len(called):
        return []  # every tool called once: the common case costs one set
    # the usual shape, checked with set passes in C: no tool call sits within two spans
    # under a tool call, and the file is one tree
    tool_ids = set(map(span_ids.__getitem__, tools))
    tool_ids.discard("")
    parents = set(map(parent_ids.__getitem__, tools))
    under_tools = set(compress(span_ids, map(tool_ids.__contains__, parent_ids)))
    if tops is None:
        tops = top_positions(span_ids, parent_ids)
    several_trees = len(tops) > 1
    if parents.isdisjoint(tool_ids) and parents.isdisjoint(under_tools) and not several_trees:
        return []
    tool_names = dict(zip(tools, called, strict=True))
    at = dict(zip(span_ids, range(len(span_ids)), strict=True))
    at.pop("", None)
    kept: dict[str, dict[int, list[int]]] = {}  # tool name -> top span -> kept calls
    repeats: list[int] = []
    for position in tools:
        name = tool_names[position]
        parent = at.get(parent_ids[position])
        if parent is not None and (
            tool_names.get(parent) == name or tool_names.get(at.get(parent_ids[parent], -1)) == name
        ):
            repeats.append(position)
            continue
        if not several_trees:
            continue
        top = _top(position, at, parent_ids)
        trees = kept.setdefault(name, {})
        elsewhere = [other for tree, calls in trees.items() if tree != top for other in calls]
        if elsewhere and any(
            _overlap(intervals(other), intervals(position)) for other in elsewhere
        ):
            repeats.append(position)
            continue
        trees.setdefault(top, []).append(position)
    return repeats


def nested_model_calls(
    kinds: Sequence[str], span_ids: Sequence[str], parent_ids: Sequence[str]
) -> list[int]:
    """Positions of model-call spans that record a model call already recorded above them.

    Two instrumentations of one call: a framework's span (LangChain's ``ChatOpenAI``, a
    LangSmith ``llm`` run) with the provider instrumentation's span (``openai.chat``) as its
    child, or grandchild through a wrapper. A model call does not call a model, so a
    model call within two spans under another is the same call, counted once.
    """
    if kinds.count("model_call") < 2:
        return []
    above = set(parent_ids)  # the spans that have spans under them: few, usually
    above.discard("")
    if len(above) <= _FEW_PARENTS and not any(
        kinds[span_ids.index(parent)] == "model_call" for parent in above if parent in span_ids
    ):
        return []  # the usual shape: no span sits under a model call
    call_ids = set(compress(span_ids, map("model_call".__eq__, kinds)))
    call_ids.discard("")
    if call_ids.isdisjoint(above):
        return []
    calls = list(compress(range(len(kinds)), map("model_call".__eq__, kinds)))
    parents = list(map(parent_ids.__getitem__, calls))
    distinct = set(parents)
    distinct.discard("")
    nesting = distinct & call_ids  # parents that are model calls themselves
    rest = distinct - nesting
    if len(rest) > _FEW_PARENTS:  # many parents: one index of the spans' parents
        parent_of = dict(zip(span_ids, parent_ids, strict=True))
        nesting |= {parent for parent in rest if parent_of.get(parent) in call_ids}
    else:  # the usual few (an agent's turns): looked up one by one, in C
        for parent in rest:
            if parent in span_ids and parent_ids[span_ids.index(parent)] in call_ids:
                nesting.add(parent)
    if not nesting:
        return []
    return [position for position, parent in zip(calls, parents, strict=True) if parent in nesting]


_FEW_PARENTS = 8


def _top(position: int, at: dict[str, int], parent_ids: Sequence[str]) -> int:
    """The top span of the tree ``position`` is in."""
    seen = {position}
    while True:
        parent = at.get(parent_ids[position])
        if parent is None or parent in seen:
            return position
        seen.add(parent)
        position = parent


def _overlap(first: tuple[int, int], second: tuple[int, int]) -> bool:
    return first[0] <= max(first[1], second[0]) and second[0] <= max(second[1], first[0])
