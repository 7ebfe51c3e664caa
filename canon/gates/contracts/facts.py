"""What constraints look at: an execution indexed once per validation.

Steps whose span ended in error are *attempts*, not evidence: they never satisfy a
requirement (a step that must run, a source that must be read, the order of steps), but
they do count as present for ``must_not_include_steps`` and ``step_present``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from canon.gates.contracts.citations import find_citations
from canon.gates.contracts.execution import DataSource, Execution, StepKind

# Step kinds that show the agent reached outside its own parametric knowledge.
GROUNDING_KINDS = frozenset({"tool_call", "retrieval"})


class Facts:
    """An execution plus the contract's source map, with the lookups constraints need.

    Each lookup is computed on first use from the execution's name, kind and status
    columns; when no step errored (the common case) the "successful steps only" lookups
    reuse the plain ones. Whole steps are read only for the sources a trace names itself,
    and only when the source map does not already account for every required source.
    """

    def __init__(self, execution: Execution, source_map: Mapping[str, DataSource]) -> None:
        self.execution = execution
        self.source_map = source_map
        self.columns = execution.columns

    @cached_property
    def names(self) -> tuple[str, ...]:
        """Every step name, in execution order (errored steps included)."""
        return self.columns.names

    @cached_property
    def kinds(self) -> tuple[StepKind, ...]:
        """Every step kind, in execution order."""
        return self.columns.kinds

    @cached_property
    def name_set(self) -> frozenset[str]:
        """Every step name, errored steps included."""
        return frozenset(self.names)

    @cached_property
    def any_failed(self) -> bool:
        """True when some step ended in error."""
        return "error" in self.columns.statuses

    def first_at(self, name: str) -> int | None:
        """Position of the first step called ``name``, errored or not (None: no such step)."""
        try:
            return self.names.index(name)  # a C-level scan that stops at the first
        except ValueError:
            return None

    def succeeded_first_at(self, name: str) -> int | None:
        """Position of the first non-errored step called ``name`` (None: no such step)."""
        if not self.any_failed:
            return self.first_at(name)
        return self.succeeded_first_index.get(name)

    @cached_property
    def succeeded_names(self) -> frozenset[str]:
        """Names of the non-errored steps."""
        if not self.any_failed:
            return self.name_set
        return frozenset(self.succeeded_first_index)

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
        pairs = zip(self.names, self.columns.statuses, strict=True)
        for position, (name, status) in enumerate(pairs):
            if status != "error" and name not in first:
                first[name] = position
        return first

    @cached_property
    def failed_only(self) -> frozenset[str]:
        """Names that appear only on errored steps."""
        return self.name_set - self.succeeded_names

    def ran(self, name: str) -> bool:
        """True when a non-errored step is called ``name``."""
        return self.succeeded_first_at(name) is not None

    def present(self, name: str) -> bool:
        """True when a step is called ``name``, errored or not."""
        return name in self.names  # a C-level scan: cheaper than a set of hundreds of names

    @cached_property
    def mapped_sources(self) -> frozenset[str]:
        """Sources the source map assigns to the names of non-errored steps."""
        # a source map names a handful of tools; a trace may hold hundreds of step names
        return frozenset(source.name for tool, source in self.source_map.items() if self.ran(tool))

    @cached_property
    def sources(self) -> frozenset[str]:
        """Source names consulted by non-errored steps: mapped by name or named in the trace."""
        found = set(self.mapped_sources)
        for step in self.execution.steps:
            if step.sources and step.status != "error":
                found.update(source.name for source in step.sources)
        return frozenset(found)

    def consulted(self, source: str) -> bool:
        """True when a non-errored step consulted ``source`` (the source map is asked first)."""
        return source in self.mapped_sources or source in self.sources

    @cached_property
    def succeeded_kinds(self) -> frozenset[StepKind]:
        """The kinds of the non-errored steps."""
        if not self.any_failed:
            return frozenset(self.kinds)
        pairs = zip(self.kinds, self.columns.statuses, strict=True)
        return frozenset(kind for kind, status in pairs if status != "error")

    @cached_property
    def grounded(self) -> bool:
        """True when some non-errored step is a tool call or a retrieval."""
        if not self.any_failed:  # scans that stop at the first tool call
            return "tool_call" in self.kinds or "retrieval" in self.kinds
        return not GROUNDING_KINDS.isdisjoint(self.succeeded_kinds)

    @cached_property
    def citations(self) -> tuple[str, ...]:
        """Distinct citations in the final answer."""
        return find_citations(self.execution.output_text)


@dataclass(frozen=True, slots=True)
class Finding:
    """Why one constraint is violated: a message and JSON-ready evidence."""

    message: str
    evidence: Mapping[str, object]
