"""The normalized execution a trace describes: the shared model of the contract gate.

The OTel normalizer produces an ``Execution``; constraints and conditions read one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

StepKind = Literal["tool_call", "model_call", "retrieval", "agent", "human_review", "custom"]
StepStatus = Literal["ok", "error", "unset"]


@dataclass(frozen=True, slots=True)
class DataSource:
    """A data source a step consulted (from the trace itself or a contract's source map)."""

    name: str
    type: str


@dataclass(frozen=True, slots=True)
class Step:
    """One span of the trace, classified."""

    name: str
    kind: StepKind
    span_id: str = ""
    parent_id: str = ""
    start_ns: int = 0
    end_ns: int = 0
    status: StepStatus = "unset"
    inputs: Any = None  # parsed tool arguments, when the trace carries them
    outputs: Any = None  # parsed tool result, when the trace carries it
    sources: tuple[DataSource, ...] = ()
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Execution:
    """Everything a contract can look at: ordered steps, request and answer text, metadata."""

    execution_id: str
    steps: tuple[Step, ...]
    input_text: str | None = None
    output_text: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    framework: str = "unknown"

    def step_names(self) -> tuple[str, ...]:
        """Names of every step, in execution order."""
        return tuple(step.name for step in self.steps)
