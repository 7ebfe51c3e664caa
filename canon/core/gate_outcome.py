"""The value a deterministic gate returns for one artifact."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

GateStatus = Literal["pass", "fail", "warn", "skip"]


@dataclass(frozen=True, slots=True)
class GateOutcome:
    """What one gate decided about one artifact, with human-readable reasons."""

    gate: str  # "policy" or "contract"
    status: GateStatus
    reasons: tuple[str, ...] = ()

    @property
    def stops(self) -> bool:
        """True when the artifact is non-canon without asking the judge."""
        return self.status == "fail"
