"""What a monitoring session saw: the counts both monitors report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MonitorStats:
    """What a monitoring session saw."""

    polls: int
    validated: int
    passed: int
    failed: int
    warned: int
    errors: int
    pending: int  # files that never became readable before the monitor stopped
    interrupted: bool = False
    late: int = 0  # spans that came after their trace was decided (recorded, never judged)

    @classmethod
    def from_counts(
        cls, counts: Mapping[str, int], *, polls: int, pending: int, interrupted: bool
    ) -> MonitorStats:
        """The stats of a session that tallied verdicts by status (pass, fail, warn, error)."""
        return cls(
            polls=polls,
            validated=counts["pass"] + counts["fail"] + counts["warn"],
            passed=counts["pass"],
            failed=counts["fail"],
            warned=counts["warn"],
            errors=counts["error"],
            pending=pending,
            interrupted=interrupted,
            late=counts.get("late", 0),
        )

    @property
    def compliance_rate(self) -> float | None:
        """Share of validated traces that passed (WARN is not compliant); None if none ran."""
        return self.passed / self.validated if self.validated else None
