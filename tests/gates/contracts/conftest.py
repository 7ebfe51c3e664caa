"""Shared builders for the contract-gate tests: executions made by hand."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from canon.gates.contracts import DataSource, Execution, Step

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "traces"


def _step(spec: str | Step | tuple[str, str]) -> Step:
    if isinstance(spec, Step):
        return spec
    if isinstance(spec, tuple):
        name, kind = spec
        return Step(name=name, kind=kind, status="ok")  # type: ignore[arg-type]
    return Step(name=spec, kind="tool_call", status="ok")


@pytest.fixture
def make_execution() -> Callable[..., Execution]:
    """Build an execution: bare strings are successful tool calls, in the order given."""

    def build(
        *steps: str | Step | tuple[str, str],
        output: str | None = "Approved per Section 4.2.1.",
        request: str | None = "Process pharmacy claim for member MEM-1",
        metadata: dict[str, Any] | None = None,
        execution_id: str = "exec-1",
    ) -> Execution:
        return Execution(
            execution_id=execution_id,
            steps=tuple(_step(spec) for spec in steps),
            input_text=request,
            output_text=output,
            metadata=metadata or {},
        )

    return build


@pytest.fixture
def kb_step() -> Callable[[str, str], Step]:
    """A retrieval step that names the knowledge base it read."""

    def build(name: str, kb: str) -> Step:
        return Step(
            name=name, kind="retrieval", status="ok", sources=(DataSource(kb, "knowledge_base"),)
        )

    return build


@pytest.fixture
def corpus_dir() -> Path:
    """The real-trace corpus shipped with the tests."""
    return CORPUS
