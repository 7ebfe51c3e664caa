"""``must_retrieve_from``: every listed data source was consulted by some successful step."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from canon.gates.contracts.facts import Facts, Finding
from canon.gates.contracts.kinds.base import (
    ConstraintKind,
    Severity,
    check_severity,
    listed,
    names,
)


@dataclass(frozen=True, slots=True)
class MustRetrieveFrom:
    """Every listed data source was consulted by some successful step."""

    sources: tuple[str, ...]
    severity: Severity = "error"
    category: ClassVar[str] = "source"
    method: ClassVar[str] = "deterministic"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sources", names(self.sources, "sources"))
        check_severity(self.severity)

    @property
    def name(self) -> str:
        return f"must_retrieve_from({list(self.sources)!r})"

    def check(self, facts: Facts) -> Finding | None:
        missing = [source for source in self.sources if not facts.consulted(source)]
        if not missing:
            return None
        return Finding(
            f"required data sources not consulted: {', '.join(missing)}",
            {
                "required": list(self.sources),
                "consulted": sorted(facts.sources),
                "missing": missing,
            },
        )


def must_retrieve_from(sources: Iterable[str], *, severity: str = "error") -> MustRetrieveFrom:
    """Every listed data source must be consulted."""
    return MustRetrieveFrom(listed(sources), check_severity(severity))


KIND = ConstraintKind(
    type="must_retrieve_from",
    constraint=MustRetrieveFrom,
    required=("sources",),
    optional=(),
    build=lambda params, severity: MustRetrieveFrom(params["sources"], severity),
    dump=lambda constraint: {"sources": list(constraint.sources)},
    summary="every data source in `sources:` (through `source_map`) was consulted by a "
    "successful step",
)
