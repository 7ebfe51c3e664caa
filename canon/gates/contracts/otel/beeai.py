"""BeeAI's ReAct agent: a tool step its update events record when no TOOL span does.

BeeAI's OpenInference instrumentation writes one span per emitter event. A tool's own
events (``tool.<...>.start``/``success``/``finish``) are TOOL spans, and ``classify`` counts
the settling one as the call. The ReAct agent also records each step in its
``agent.react.update`` events; the update that carries the tool's ``output.value`` names the
tool (``tool.name``) and its input (``tool.parameters``). When the agent's iteration holds
no TOOL-span call (an export that lost those spans, a tool whose emitter is not traced),
that update is the only record of the call, so it counts as the call, named by its tool.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import compress, repeat
from typing import Any

_UPDATE = "agent.react.update"
_UPDATE_SPAN = _UPDATE + "-"  # BeeAI numbers its event spans: agent.react.update-18


def agent_recorded_calls(
    names: Sequence[str],
    kinds: Sequence[str],
    span_ids: Sequence[str],
    parent_ids: Sequence[str],
    attributes: Callable[[int], Mapping[str, Any]],
) -> list[tuple[int, str]]:
    """Positions of BeeAI agent updates that are a tool call's only record, with the tool."""
    # C passes only: the agent steps, then those named like BeeAI's update events
    agents = list(compress(range(len(kinds)), map("agent".__eq__, kinds)))
    named = map(str.startswith, map(names.__getitem__, agents), repeat(_UPDATE_SPAN))
    candidates = list(compress(agents, named))
    if not candidates:
        return []  # no BeeAI ReAct agent
    found: list[tuple[int, str]] = []
    for position in candidates:
        attrs = attributes(position)
        tool = attrs.get("tool.name")
        if attrs.get("target") != _UPDATE or attrs.get("output.value") is None:
            continue  # an update that chose a tool but holds no result is no call yet
        if isinstance(tool, str) and tool.strip():
            found.append((position, tool.strip()))
    if not found:
        return []
    where = {span_id: position for position, span_id in enumerate(span_ids) if span_id}
    # every span above a TOOL-span call: an iteration among them has its call counted
    covered: set[int] = set()
    calls = compress(range(len(kinds)), map("tool_call".__eq__, kinds))
    for call in calls:
        above = where.get(parent_ids[call])
        while above is not None and above not in covered:
            covered.add(above)
            above = where.get(parent_ids[above])
    return [(at, tool) for at, tool in found if where.get(parent_ids[at]) not in covered]
