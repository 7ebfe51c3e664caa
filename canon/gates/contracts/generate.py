"""Deriving a baseline contract from one known-good ("golden") execution."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from canon.gates.contracts.constraints import (
    Constraint,
    MustContainCitations,
    MustIncludeSteps,
    MustNotUseOnlyParametricKnowledge,
    MustPrecede,
    MustRetrieveFrom,
)
from canon.gates.contracts.errors import ContractError
from canon.gates.contracts.execution import DataSource, Execution
from canon.gates.contracts.facts import Facts
from canon.gates.contracts.model import Contract
from canon.gates.contracts.otel.steps import UNNAMED


def generate_contract(
    execution: Execution,
    *,
    name: str,
    version: str = "1.0.0",
    source_map: Mapping[str, DataSource] | None = None,
) -> Contract:
    """Write down what the golden execution did, as a contract that it passes itself.

    Sources consulted become ``must_retrieve_from``; successful tool calls become
    ``must_include_steps`` (each tool once) and a ``must_precede`` chain over their
    *first* occurrences; a cited answer becomes ``must_contain_citations``.
    """
    mapping = dict(source_map or {})
    facts = Facts(execution, mapping)
    succeeded = facts.succeeded_first_index
    tools = sorted(
        {
            step.name
            for step in execution.steps
            if step.kind == "tool_call" and step.name in succeeded and step.name != UNNAMED
        },
        key=succeeded.__getitem__,
    )
    constraints: list[Constraint] = []
    if facts.sources:
        constraints.append(MustRetrieveFrom(tuple(sorted(facts.sources))))
    if facts.grounded:
        constraints.append(MustNotUseOnlyParametricKnowledge())
    if tools:
        constraints.append(MustIncludeSteps(tuple(tools)))
    for before, after in itertools.pairwise(tools):
        # A failed attempt at `after` ahead of `before` would make the pair fail; skip it.
        if succeeded[before] < facts.first_index[after]:
            constraints.append(MustPrecede(before, after))
    if facts.citations:
        constraints.append(MustContainCitations(1))
    if not constraints:
        # a placeholder name would pass against any trace with a nameless span
        named = (name for name in succeeded if name != UNNAMED)
        steps = tuple(sorted(named, key=succeeded.__getitem__))
        if not steps:
            raise ContractError(
                f"execution {execution.execution_id!r} has no successful step to build a "
                f"contract from; record a golden trace in which the agent did its work"
            )
        constraints.append(MustIncludeSteps(steps))
    return Contract(name=name, version=version, constraints=tuple(constraints), source_map=mapping)
