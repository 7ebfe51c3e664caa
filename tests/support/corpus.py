"""The trace recordings of the test corpus, for tests that read every one of them."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
# real-traces: the shared corpus; traces and backends: other projects' recordings
TRACE_FILES = sorted(
    path
    for folder in ("real-traces", "traces", "backends")
    for path in (TESTS / "corpus" / folder).rglob("*")
    if path.suffix in (".json", ".jsonl")
)
