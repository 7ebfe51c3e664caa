"""PrecedenceTrace evidence: variance per dimension and bounded swap-path witnesses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from canon.gates.policy.observation import Observation

Order = tuple[int, ...]
OUTCOME: Final = "outcome"
REASON_EVIDENCE: Final = "reason_evidence"
PARTICIPATION: Final = "participation"
PRESENTATION: Final = "presentation"
DIMENSIONS: Final = (OUTCOME, REASON_EVIDENCE, PARTICIPATION, PRESENTATION)


def _shared(left: Observation, right: Observation) -> list[str]:
    return sorted(set(left.passes) & set(right.passes))


def outcome_pair(left: Observation, right: Observation) -> tuple[Any, Any]:
    """Shared-rule passes, plus the overall pass only when participation is identical."""
    shared = _shared(left, right)
    pair = []
    for side in (left, right):
        projection: dict[str, Any] = {"rule_passed": {key: side.passes[key] for key in shared}}
        if left.participation == right.participation:
            projection["passed"] = side.passed
        pair.append(projection)
    return pair[0], pair[1]


def evidence_pair(left: Observation, right: Observation) -> tuple[Any, Any]:
    """Shared-rule [kind, path, reason_code] triples."""
    shared = _shared(left, right)
    left_projection = {"rule_evidence": {key: list(left.evidence[key]) for key in shared}}
    right_projection = {"rule_evidence": {key: list(right.evidence[key]) for key in shared}}
    return left_projection, right_projection


def participation_pair(left: Observation, right: Observation) -> tuple[Any, Any]:
    """The multiset of evaluated rule ids, as sorted (rule_id, count) entries."""

    def project(side: Observation) -> Any:
        entries = [{"count": 1, "rule_id": key} for key in side.participation]
        return {"rule_participation": entries}

    return project(left), project(right)


def presentation_pair(left: Observation, right: Observation) -> tuple[Any, Any]:
    """The rule ids in the order the evaluator returned them."""
    return {"rule_ids": list(left.presentation)}, {"rule_ids": list(right.presentation)}


PROJECTIONS: Final[dict[str, Callable[[Observation, Observation], tuple[Any, Any]]]] = {
    OUTCOME: outcome_pair,
    REASON_EVIDENCE: evidence_pair,
    PARTICIPATION: participation_pair,
    PRESENTATION: presentation_pair,
}


def swapped(order: Order, index: int) -> Order:
    """``order`` with positions ``index`` and ``index + 1`` exchanged."""
    items = list(order)
    items[index], items[index + 1] = items[index + 1], items[index]
    return tuple(items)


def identity_drift(
    dimension: str, orders: list[Order], seen: dict[Order, Observation]
) -> tuple[str, Order, Order] | None:
    """The first identity-level drift (reason, first-seen order, differing order), if any."""
    first: dict[str, tuple[Any, Order]] = {}
    by_participation: dict[tuple[str, ...], tuple[bool, Order]] = {}
    pair_reason = "shared_rule_pass" if dimension == OUTCOME else "shared_rule_evidence"
    for order in orders:
        observation = seen[order]
        table: dict[str, Any] = observation.passes if dimension == OUTCOME else observation.evidence
        for key in sorted(table):
            earlier = first.setdefault(key, (table[key], order))
            if earlier[0] != table[key]:
                return pair_reason, earlier[1], order
    if dimension != OUTCOME:
        return None
    for order in orders:
        observation = seen[order]
        earlier_pass = by_participation.setdefault(
            observation.participation, (observation.passed, order)
        )
        if earlier_pass[0] != observation.passed:
            return "aggregate_with_equal_participation", earlier_pass[1], order
    return None


def adjacent_difference(
    dimension: str, orders: list[Order], seen: dict[Order, Observation]
) -> tuple[Order, int, Any, Any] | None:
    """The first (order, swap index) whose swapped neighbour projects differently."""
    project = PROJECTIONS[dimension]
    for order in orders:
        for index in range(len(order) - 1):
            left_projection, right_projection = project(seen[order], seen[swapped(order, index)])
            if left_projection != right_projection:
                return order, index, left_projection, right_projection
    return None


def bubble_path(left: Order, right: Order) -> list[Order]:
    """Orders from ``left`` to ``right``, one adjacent swap apart, bubbling each id leftwards."""
    current = list(left)
    path = [tuple(current)]
    for target, item in enumerate(right):
        position = current.index(item)
        while position > target:
            current[position - 1], current[position] = current[position], current[position - 1]
            position -= 1
            path.append(tuple(current))
    return path


def build_witness(
    dimension: str,
    orders: list[Order],
    seen: dict[Order, Observation],
    names: Callable[[Order], list[str]],
) -> dict[str, Any] | None:
    """An adjacent-swap witness, else bounded endpoint evidence with a swap path."""
    found = adjacent_difference(dimension, orders, seen)
    if found is not None:
        order, index, left_projection, right_projection = found
        right = swapped(order, index)
        return {
            "comparison": "adjacent_swap",
            "dimension": dimension,
            "left_order": names(order),
            "left_projection": left_projection,
            "right_order": names(right),
            "right_projection": right_projection,
            "swap_index": index,
            "swapped_rule_ids": [names(order)[index], names(order)[index + 1]],
        }
    if dimension not in (OUTCOME, REASON_EVIDENCE):
        return None
    drift = identity_drift(dimension, orders, seen)
    if drift is None:
        return None
    reason, left, right = drift
    left_projection, right_projection = PROJECTIONS[dimension](seen[left], seen[right])
    return {
        "adjacent_swap_path": [names(step) for step in bubble_path(left, right)],
        "comparison": "endpoint_path",
        "dimension": dimension,
        "left_order": names(left),
        "left_projection": left_projection,
        "reason": reason,
        "right_order": names(right),
        "right_projection": right_projection,
    }


def variance_of(orders: list[Order], seen: dict[Order, Observation]) -> dict[str, bool]:
    """Which dimensions changed anywhere within the enumerated orders."""
    return {
        OUTCOME: identity_drift(OUTCOME, orders, seen) is not None,
        REASON_EVIDENCE: identity_drift(REASON_EVIDENCE, orders, seen) is not None,
        PARTICIPATION: len({seen[order].participation for order in orders}) > 1,
        PRESENTATION: len({seen[order].presentation for order in orders}) > 1,
    }
