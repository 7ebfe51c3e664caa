"""PrecedenceTrace: does permuting peer rules change what one response is judged to be?"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from canon.gates.policy.errors import (
    ORDER_CHECK_INVALID,
    ORDER_CHECK_TOO_LARGE,
    PolicyError,
)
from canon.gates.policy.evaluation import check_response, evaluate_checked
from canon.gates.policy.jsonvalue import canonical_size, canonical_text
from canon.gates.policy.model import Policy
from canon.gates.policy.observation import (
    RESULT_BYTE_LIMIT,
    Observation,
    observe,
    observe_builtin,
    result_text,
)
from canon.gates.policy.validation import validate_policy
from canon.gates.policy.witness import (
    OUTCOME,
    PARTICIPATION,
    PRESENTATION,
    REASON_EVIDENCE,
    Order,
    build_witness,
    variance_of,
)

MIN_ORDER_RULES: Final = 2
MAX_ORDER_RULES: Final = 7
REPEATS: Final = 3
WORK_BUDGET_BYTES: Final = 100_000_000
REPORT_BYTE_LIMIT: Final = 1_000_000

SEMANTIC_ORDER_DRIFT: Final = "SEMANTIC_ORDER_DRIFT"
EVIDENCE_ORDER_DRIFT: Final = "EVIDENCE_ORDER_DRIFT"
PARTICIPATION_ORDER_DRIFT: Final = "PARTICIPATION_ORDER_DRIFT"
COMPOUND_ORDER_DRIFT: Final = "COMPOUND_ORDER_DRIFT"
INCOMPLETE_RULE_COVERAGE: Final = "INCOMPLETE_RULE_COVERAGE"
PRESENTATION_ONLY_DRIFT: Final = "PRESENTATION_ONLY_DRIFT"
NO_VARIANCE_OBSERVED: Final = "NO_VARIANCE_OBSERVED"
INCONCLUSIVE_NONDETERMINISTIC: Final = "INCONCLUSIVE_NONDETERMINISTIC"

# The hook receives the permuted policy and the response, and returns an EvaluationResult or
# its JSON document. It is trusted code: nothing here sandboxes or interrupts it.
Evaluator = Callable[[Policy, dict[str, Any]], Any]


@dataclass(frozen=True, slots=True)
class OrderReport:
    """The PrecedenceTrace report; ``to_json`` gives the full document."""

    policy_id: str
    status: str
    conforms_within_coverage: bool | None
    document_text: str

    def to_json(self) -> dict[str, Any]:
        """A fresh copy of the report document."""
        result: dict[str, Any] = json.loads(self.document_text)
        return result


class _Ledger:
    """Work accounting: planned input bytes per run plus every observed result's bytes."""

    def __init__(self, policy: Policy, input_bytes: int) -> None:
        self.policy = policy
        self.input_bytes = input_bytes
        self.runs = 0
        self.result_bytes = 0

    @property
    def charged(self) -> int:
        return self.runs * self.input_bytes + self.result_bytes

    def charge(self, result_bytes: int) -> None:
        self.runs += 1
        self.result_bytes += result_bytes
        if self.charged > WORK_BUDGET_BYTES:
            raise _too_large(
                self.policy,
                f"observed work reached {self.charged} bytes after {self.runs} evaluator runs, "
                f"over the budget of {WORK_BUDGET_BYTES}",
            )


def _too_large(policy: Policy, problem: str) -> PolicyError:
    return PolicyError(
        ORDER_CHECK_TOO_LARGE,
        f"check-order for policy {policy.policy_id!r}: {problem}; use fewer rules or a smaller "
        "response",
        policy_id=policy.policy_id,
    )


def _checked_policy(policy: Policy | dict[str, Any]) -> Policy:
    try:
        checked = validate_policy(policy)
    except PolicyError as exc:
        raise exc.with_code(ORDER_CHECK_INVALID) from None
    count = len(checked.rules)
    if count < MIN_ORDER_RULES:
        raise PolicyError(
            ORDER_CHECK_INVALID,
            f"check-order needs {MIN_ORDER_RULES} to {MAX_ORDER_RULES} peer rules, policy "
            f"{checked.policy_id!r} declares {count}; add a rule to compare",
            policy_id=checked.policy_id,
        )
    if count > MAX_ORDER_RULES:
        raise _too_large(
            checked,
            f"{count} rules would need {math.factorial(count)} orders; the exhaustive limit is "
            f"{MAX_ORDER_RULES} rules and sampling is refused",
        )
    return checked


def ensure_order_rule_count(policy: Policy) -> None:
    """Raise the check-order rule-count errors before any response is read."""
    _checked_policy(policy)


def _fingerprint(text: str) -> str:
    import hashlib  # only nondeterministic reports need it; keeps CLI start-up lean

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _coverage(
    ledger: _Ledger, rule_count: int, estimated: int, attempted: int, completed: int
) -> dict[str, Any]:
    total = math.factorial(rule_count)
    return {
        "charged_work_bytes": ledger.charged,
        "estimated_input_work_bytes": estimated,
        "estimated_work_bytes": estimated,
        "evaluations_per_order": REPEATS,
        "evaluations_performed": ledger.runs,
        "evaluator_runs": ledger.runs,
        "incomplete_orders": None,
        "mode": "exhaustive" if completed == total else "incomplete",
        "observed_result_bytes": ledger.result_bytes,
        "observed_work_bytes": ledger.charged,
        "orders_attempted": attempted,
        "orders_completed": completed,
        "orders_evaluated": completed,
        "orders_total": total,
        "report_byte_limit": REPORT_BYTE_LIMIT,
        "result_byte_limit": RESULT_BYTE_LIMIT,
        "rule_count": rule_count,
        "rule_results_complete": None,
        "work_budget_bytes": WORK_BUDGET_BYTES,
    }


def _status(variance: dict[str, bool], incomplete: bool) -> str:
    semantic = [variance[OUTCOME], variance[REASON_EVIDENCE], variance[PARTICIPATION]]
    if sum(semantic) >= 2:
        return COMPOUND_ORDER_DRIFT
    if variance[PARTICIPATION]:
        return PARTICIPATION_ORDER_DRIFT
    if variance[OUTCOME]:
        return SEMANTIC_ORDER_DRIFT
    if variance[REASON_EVIDENCE]:
        return EVIDENCE_ORDER_DRIFT
    if incomplete:
        return INCOMPLETE_RULE_COVERAGE
    if variance[PRESENTATION]:
        return PRESENTATION_ONLY_DRIFT
    return NO_VARIANCE_OBSERVED


def _finish(policy: Policy, document: dict[str, Any]) -> OrderReport:
    text = canonical_text(document)
    size = len(text.encode("utf-8"))
    if size > REPORT_BYTE_LIMIT:
        raise _too_large(
            policy, f"the report would be {size} bytes, over the limit of {REPORT_BYTE_LIMIT}"
        )
    return OrderReport(
        policy.policy_id, document["status"], document["conforms_within_coverage"], text
    )


def _run_order(
    policy: Policy,
    order: Order,
    response: dict[str, Any],
    evaluator: Evaluator | None,
    ledger: _Ledger,
) -> tuple[Observation, None] | tuple[None, dict[str, Any]]:
    permuted = policy.reordered(order)
    first_text = ""
    observation: Observation | None = None
    for repeat in range(1, REPEATS + 1):
        if evaluator is None:
            result = evaluate_checked(permuted, response)
            text = canonical_text(result.to_json())
            ledger.charge(len(text.encode("utf-8")))
            if repeat == 1:
                observation = observe_builtin(result)
        else:
            text, document = result_text(policy, evaluator(permuted, response))
            ledger.charge(len(text.encode("utf-8")))
            checked = observe(policy, document)
            if repeat == 1:
                observation = checked
        if repeat == 1:
            first_text = text
        elif text != first_text:
            return None, {
                "dimension": "evaluator_result",
                "left_fingerprint": _fingerprint(first_text),
                "left_repeat": 1,
                "order": [policy.rules[index].rule_id for index in order],
                "right_fingerprint": _fingerprint(text),
                "right_repeat": repeat,
            }
    assert observation is not None
    return observation, None


def check_order_conformance(
    policy: Policy | dict[str, Any],
    response: Any,
    *,
    evaluator: Evaluator | None = None,
) -> OrderReport:
    """Evaluate every order of 2-7 peer rules three times and report order-dependent drift."""
    checked = _checked_policy(policy)
    check_response(response, code=ORDER_CHECK_INVALID)
    rule_count = len(checked.rules)
    input_bytes = canonical_size(checked.to_json()) + canonical_size(response)
    estimated = input_bytes * math.factorial(rule_count) * REPEATS
    if estimated > WORK_BUDGET_BYTES:
        raise _too_large(
            checked,
            f"the estimated work is {estimated} bytes, over the budget of {WORK_BUDGET_BYTES}",
        )
    ids = [rule.rule_id for rule in checked.rules]

    def names(order: Order) -> list[str]:
        return [ids[index] for index in order]

    ledger = _Ledger(checked, input_bytes)
    orders: list[Order] = []
    seen: dict[Order, Observation] = {}
    for order in itertools.permutations(range(rule_count)):
        observation, unstable = _run_order(checked, order, response, evaluator, ledger)
        if unstable is not None:
            coverage = _coverage(ledger, rule_count, estimated, len(orders) + 1, len(orders))
            return _finish(
                checked,
                {
                    **_report_base(checked, INCONCLUSIVE_NONDETERMINISTIC, None),
                    "coverage": coverage,
                    "presentation_follows_requested_order": None,
                    "variance": None,
                    "witnesses": [unstable],
                },
            )
        assert observation is not None
        orders.append(order)
        seen[order] = observation
    incomplete = [order for order in orders if not seen[order].complete]
    variance = variance_of(orders, seen)
    witnesses = []
    for dimension in (OUTCOME, REASON_EVIDENCE, PARTICIPATION, PRESENTATION):
        if variance[dimension]:
            witness = build_witness(dimension, orders, seen, names)
            if witness is not None:
                witnesses.append(witness)
    if incomplete:
        first = incomplete[0]
        witnesses.append(
            {
                "dimension": "rule_coverage",
                "missing_rule_ids": sorted(set(ids) - set(seen[first].participation)),
                "order": names(first),
            }
        )
    conforms = not (
        incomplete or variance[OUTCOME] or variance[REASON_EVIDENCE] or variance[PARTICIPATION]
    )
    coverage = _coverage(ledger, rule_count, estimated, len(orders), len(orders))
    coverage["incomplete_orders"] = len(incomplete)
    coverage["rule_results_complete"] = not incomplete
    # exhaustive mode carries exactly the specified keys: attempted/completed counts
    # belong to the incomplete (nondeterministic) report only
    del coverage["orders_attempted"], coverage["orders_completed"]
    follows = all(seen[order].presentation == tuple(names(order)) for order in orders)
    return _finish(
        checked,
        {
            **_report_base(checked, _status(variance, bool(incomplete)), conforms),
            "coverage": coverage,
            "presentation_follows_requested_order": follows,
            "variance": variance,
            "witnesses": witnesses,
        },
    )


def _report_base(policy: Policy, status: str, conforms: bool | None) -> dict[str, Any]:
    return {
        "baseline_repeats": REPEATS,
        "conforms_within_coverage": conforms,
        "evaluation_repeats_per_order": REPEATS,
        "policy_id": policy.policy_id,
        "report_schema_version": "1.0",
        "status": status,
    }
