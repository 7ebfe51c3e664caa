"""What constraints look at: an execution indexed once per validation.

Steps whose span ended in error are *attempts*, not evidence: they never satisfy a
requirement (a step that must run, a source that must be read, the order of steps), but
they do count as present for ``must_not_include_steps`` and ``step_present``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from operator import attrgetter

from canon.gates.contracts.citations import find_citations
from canon.gates.contracts.execution import STEP_NAME, DataSource, Execution

# Step kinds that show the agent reached outside its own parametric knowledge.
GROUNDING_KINDS = frozenset({"tool_call", "retrieval"})


class Facts:
    """An execution plus the contract's source map, with the lookups constraints need.

    Each lookup is computed on first use, with C-level passes over the steps; when no step
    errored (the common case) the "successful steps only" lookups reuse the plain ones.
    """

    def __init__(self, execution: Execution, source_map: Mapping[str, DataSource]) -> None:
        self.execution = execution
        self.source_map = source_map

    @cached_property
    def names(self) -> tuple[str, ...]:
        """Every step name, in execution order (errored steps included)."""
        return self.execution.step_names()

    @cached_property
    def name_set(self) -> frozenset[str]:
        """Every step name, errored steps included."""
        return frozenset(self.names)

    @cached_property
    def any_failed(self) -> bool:
        """True when some step ended in error."""
        return "error" in set(map(_STATUS, self.execution.steps))

    @cached_property
    def first_index(self) -> dict[str, int]:
        """Position of each name's first step, errored or not."""
        # Walking backwards lets the earliest position overwrite later ones.
        names = self.names
        return dict(zip(reversed(names), range(len(names) - 1, -1, -1), strict=True))

    @cached_property
    def succeeded_first_index(self) -> dict[str, int]:
        """Position of each name's first non-errored step."""
        if not self.any_failed:
            return self.first_index
        first: dict[str, int] = {}
        for position, step in enumerate(self.execution.steps):
            if step.status != "error" and step.name not in first:
                first[step.name] = position
        return first

    @cached_property
    def failed_only(self) -> frozenset[str]:
        """Names that appear only on errored steps."""
        return self.name_set - self.succeeded_first_index.keys()

    @cached_property
    def sources(self) -> frozenset[str]:
        """Source names consulted by non-errored steps: found in the trace or mapped by name."""
        steps = self.execution.steps
        if self.any_failed:
            steps = tuple(step for step in steps if step.status != "error")
            names: frozenset[str] = frozenset(map(STEP_NAME, steps))
        else:
            names = self.name_set
        found: set[str] = set()
        for step_sources in filter(None, map(_SOURCES, steps)):
            found.update(source.name for source in step_sources)
        source_map = self.source_map
        for name in names:
            mapped = source_map.get(name)
            if mapped is not None:
                found.add(mapped.name)
        return frozenset(found)

    @cached_property
    def grounded(self) -> bool:
        """True when some non-errored step is a tool call or a retrieval."""
        steps = self.execution.steps
        if not self.any_failed:
            return not GROUNDING_KINDS.isdisjoint(map(_KIND, steps))
        return any(step.kind in GROUNDING_KINDS and step.status != "error" for step in steps)

    @cached_property
    def citations(self) -> tuple[str, ...]:
        """Distinct citations in the final answer."""
        return find_citations(self.execution.output_text)


_STATUS = attrgetter("status")
_SOURCES = attrgetter("sources")
_KIND = attrgetter("kind")


@dataclass(frozen=True, slots=True)
class Finding:
    """Why one constraint is violated: a message and JSON-ready evidence."""

    message: str
    evidence: Mapping[str, object]
