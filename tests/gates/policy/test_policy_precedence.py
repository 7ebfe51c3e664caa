"""PrecedenceTrace: every status through planted evaluator hooks, and every fail-closed check."""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable
from typing import Any

import pytest

from canon.gates.policy import (
    Policy,
    PolicyError,
    check_order_conformance,
    evaluate_response,
    precedence,
    validate_policy,
)

Hook = Callable[[Policy, dict[str, Any]], Any]


def make_policy(count: int = 3) -> Policy:
    return validate_policy(
        {
            "schema_version": "1.0",
            "policy_id": "peers",
            "rules": [
                {"rule_id": f"r{i}", "kind": "required_field", "path": f"f{i}"}
                for i in range(count)
            ],
        }
    )


RESPONSE = {f"f{i}": i for i in range(8)}


def builtin_document(policy: Policy, response: dict[str, Any]) -> dict[str, Any]:
    return evaluate_response(policy, response).to_json()


def declared_order(policy: Policy, response: dict[str, Any]) -> dict[str, Any]:
    document = builtin_document(policy, response)
    document["rule_results"].sort(key=lambda item: item["rule_id"])
    return document


def edit(change: Callable[[Policy, dict[str, Any]], None]) -> Hook:
    def hook(policy: Policy, response: dict[str, Any]) -> Any:
        document = declared_order(policy, response)
        change(policy, document)
        results = document["rule_results"]
        ids = {rule.rule_id for rule in policy.rules}
        complete = {item["rule_id"] for item in results} == ids
        document["passed"] = complete and all(item["passed"] for item in results)
        return document

    return hook


def item_for(document: dict[str, Any], rule_id: str) -> dict[str, Any]:
    return next(item for item in document["rule_results"] if item["rule_id"] == rule_id)


def first_rule_fails(policy: Policy, document: dict[str, Any]) -> None:
    item_for(document, policy.rules[0].rule_id)["passed"] = False


def first_rule_relabelled(policy: Policy, document: dict[str, Any]) -> None:
    item_for(document, policy.rules[0].rule_id)["reason_code"] = "FIRST_SEEN"


def second_rule_skipped_when_r0_leads(policy: Policy, document: dict[str, Any]) -> None:
    if policy.rules[0].rule_id == "r0":
        document["rule_results"] = [i for i in document["rule_results"] if i["rule_id"] != "r1"]


def always_skip_r2(policy: Policy, document: dict[str, Any]) -> None:
    document["rule_results"] = [i for i in document["rule_results"] if i["rule_id"] != "r2"]


def both_pass_and_reason(policy: Policy, document: dict[str, Any]) -> None:
    first_rule_fails(policy, document)
    first_rule_relabelled(policy, document)


def report(hook: Hook | None, count: int = 3) -> dict[str, Any]:
    return check_order_conformance(make_policy(count), RESPONSE, evaluator=hook).to_json()


@pytest.mark.parametrize(
    ("hook", "status", "conforms"),
    [
        (None, "PRESENTATION_ONLY_DRIFT", True),
        (declared_order, "NO_VARIANCE_OBSERVED", True),
        (edit(first_rule_fails), "SEMANTIC_ORDER_DRIFT", False),
        (edit(first_rule_relabelled), "EVIDENCE_ORDER_DRIFT", False),
        (edit(second_rule_skipped_when_r0_leads), "PARTICIPATION_ORDER_DRIFT", False),
        (edit(both_pass_and_reason), "COMPOUND_ORDER_DRIFT", False),
        (edit(always_skip_r2), "INCOMPLETE_RULE_COVERAGE", False),
    ],
)
def test_planted_evaluators_produce_each_status(
    hook: Hook | None, status: str, conforms: bool
) -> None:
    document = report(hook)
    assert document["status"] == status
    assert document["conforms_within_coverage"] is conforms
    assert document["coverage"]["mode"] == "exhaustive"
    assert document["coverage"]["orders_evaluated"] == 6


def test_nondeterministic_evaluator_is_inconclusive_with_a_repeat_witness() -> None:
    calls = itertools.count()

    def flaky(policy: Policy, response: dict[str, Any]) -> Any:
        document = declared_order(policy, response)
        if next(calls) == 4:  # second order, second repeat
            document["rule_results"][0]["reason_code"] = "DIFFERENT"
        return document

    document = report(flaky)
    assert document["status"] == "INCONCLUSIVE_NONDETERMINISTIC"
    assert document["conforms_within_coverage"] is None
    assert document["variance"] is None
    assert document["presentation_follows_requested_order"] is None
    coverage = document["coverage"]
    assert coverage["mode"] == "incomplete"
    assert (coverage["orders_attempted"], coverage["orders_completed"]) == (2, 1)
    assert coverage["evaluator_runs"] == 5
    assert coverage["rule_results_complete"] is None
    (witness,) = document["witnesses"]
    assert witness["dimension"] == "evaluator_result"
    assert (witness["left_repeat"], witness["right_repeat"]) == (1, 2)
    assert witness["order"] == ["r0", "r2", "r1"]
    assert witness["left_fingerprint"] != witness["right_fingerprint"]
    assert len(witness["left_fingerprint"]) == 64


def test_the_incomplete_mode_adds_only_the_attempted_and_completed_counts() -> None:
    calls = itertools.count()

    def flaky(policy: Policy, response: dict[str, Any]) -> Any:
        document = declared_order(policy, response)
        document["rule_results"][0]["reason_code"] = f"R{next(calls)}"
        return document

    incomplete, exhaustive = report(flaky)["coverage"], report(None)["coverage"]
    assert set(incomplete) - set(exhaustive) == {"orders_attempted", "orders_completed"}
    assert set(exhaustive) <= set(incomplete)


def test_builtin_report_has_the_specified_keys_and_one_presentation_witness() -> None:
    document = report(None)
    assert sorted(document) == [
        "baseline_repeats",
        "conforms_within_coverage",
        "coverage",
        "evaluation_repeats_per_order",
        "policy_id",
        "presentation_follows_requested_order",
        "report_schema_version",
        "status",
        "variance",
        "witnesses",
    ]
    assert document["variance"] == {
        "outcome": False,
        "participation": False,
        "presentation": True,
        "reason_evidence": False,
    }
    (witness,) = document["witnesses"]
    assert witness["comparison"] == "adjacent_swap"
    assert witness["swap_index"] == 0
    assert witness["swapped_rule_ids"] == ["r0", "r1"]
    assert witness["left_projection"] == {"rule_ids": ["r0", "r1", "r2"]}
    assert witness["right_order"] == ["r1", "r0", "r2"]
    assert document["presentation_follows_requested_order"] is True


def test_semantic_drift_witness_is_an_adjacent_swap_with_shared_rule_passes() -> None:
    witness = report(edit(first_rule_fails))["witnesses"][0]
    assert witness["dimension"] == "outcome"
    assert witness["comparison"] == "adjacent_swap"
    assert witness["left_projection"]["rule_passed"]["r0"] is False
    assert witness["right_projection"]["rule_passed"]["r0"] is True


def test_incomplete_coverage_adds_a_rule_coverage_witness() -> None:
    document = report(edit(always_skip_r2))
    assert document["coverage"]["incomplete_orders"] == 6
    assert document["coverage"]["rule_results_complete"] is False
    assert document["witnesses"][-1] == {
        "dimension": "rule_coverage",
        "missing_rule_ids": ["r2"],
        "order": ["r0", "r1", "r2"],
    }


def test_drift_invisible_across_one_swap_gets_an_endpoint_path_witness() -> None:
    def position_dependent(policy: Policy, document: dict[str, Any]) -> None:
        position = [rule.rule_id for rule in policy.rules].index("r0")
        if position == 1:
            document["rule_results"] = [i for i in document["rule_results"] if i["rule_id"] != "r0"]
        elif position == 2:
            item_for(document, "r0")["passed"] = False

    document = report(edit(position_dependent))
    outcome = next(w for w in document["witnesses"] if w["dimension"] == "outcome")
    assert outcome["comparison"] == "endpoint_path"
    assert outcome["reason"] == "shared_rule_pass"
    path = outcome["adjacent_swap_path"]
    assert path[0] == outcome["left_order"] and path[-1] == outcome["right_order"]
    for left, right in itertools.pairwise(path):
        assert sum(a != b for a, b in zip(left, right, strict=True)) == 2
    assert document["status"] == "COMPOUND_ORDER_DRIFT"


def canonical_length(value: Any) -> int:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return len(text.encode("utf-8"))


def test_work_arithmetic_uses_canonical_compact_sizes() -> None:
    policy = make_policy(4)
    response = {"f0": "é", "f1": [1, 2.5], "f2": None, "f3": {"z": 1, "a": 2}}
    coverage = check_order_conformance(policy, response).to_json()["coverage"]
    inputs = canonical_length(policy.to_json()) + canonical_length(response)
    result = canonical_length(evaluate_response(policy, response).to_json())
    runs = 3 * math.factorial(4)
    assert coverage["estimated_input_work_bytes"] == inputs * runs
    assert coverage["estimated_work_bytes"] == inputs * runs
    assert coverage["observed_result_bytes"] == result * runs
    assert coverage["charged_work_bytes"] == inputs * runs + result * runs
    assert coverage["observed_work_bytes"] == coverage["charged_work_bytes"]
    assert coverage["evaluations_performed"] == coverage["evaluator_runs"] == runs
    assert coverage["orders_total"] == 24
    assert coverage["work_budget_bytes"] == 100_000_000
    assert coverage["result_byte_limit"] == coverage["report_byte_limit"] == 1_000_000


def error_of(policy: Any, response: Any, hook: Hook | None = None) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        check_order_conformance(policy, response, evaluator=hook)
    return info.value


def test_estimated_work_over_budget_is_refused_before_any_evaluation() -> None:
    calls: list[int] = []

    def counting(policy: Policy, response: dict[str, Any]) -> Any:
        calls.append(1)
        return builtin_document(policy, response)

    padded = {**RESPONSE, "pad": "x" * 7000}
    error = error_of(make_policy(7), padded, counting)
    assert error.code == "ORDER_CHECK_TOO_LARGE"
    assert "estimated work" in error.message
    assert calls == []


def test_observed_work_over_budget_stops_mid_run() -> None:
    policy = make_policy(6)
    base = canonical_length(policy.to_json()) + canonical_length({**RESPONSE, "pad": ""})
    padded = {**RESPONSE, "pad": "x" * (46_000 - base)}
    error = error_of(policy, padded)
    assert error.code == "ORDER_CHECK_TOO_LARGE"
    assert "observed work" in error.message


def test_fewer_than_two_rules_is_invalid() -> None:
    assert error_of(make_policy(1), RESPONSE).code == "ORDER_CHECK_INVALID"


def test_eight_rules_are_refused_rather_than_sampled() -> None:
    error = error_of(make_policy(8), "the response is not even looked at")
    assert error.code == "ORDER_CHECK_TOO_LARGE"


def test_invalid_dict_policy_is_reported_as_order_check_invalid() -> None:
    error = error_of({"schema_version": "1.0"}, RESPONSE)
    assert error.code == "ORDER_CHECK_INVALID"


@pytest.mark.parametrize("response", [[], {"x": float("inf")}])
def test_unusable_response_is_order_check_invalid(response: Any) -> None:
    assert error_of(make_policy(2), response).code == "ORDER_CHECK_INVALID"


def corrupt(change: Callable[[dict[str, Any]], Any]) -> Hook:
    def hook(policy: Policy, response: dict[str, Any]) -> Any:
        document = declared_order(policy, response)
        replaced = change(document)
        return document if replaced is None else replaced

    return hook


FAIL_CLOSED = {
    "extra top-level field": corrupt(lambda d: d.update(extra=1)),
    "missing top-level field": corrupt(lambda d: d.pop("passed") and None),
    "mismatched policy_id": corrupt(lambda d: d.update(policy_id="other")),
    "foreign rule id": corrupt(lambda d: d["rule_results"][0].update(rule_id="ghost")),
    "duplicate rule id": corrupt(
        lambda d: d["rule_results"].__setitem__(1, dict(d["rule_results"][0]))
    ),
    "kind mismatch": corrupt(lambda d: d["rule_results"][0].update(kind="equals")),
    "path mismatch": corrupt(lambda d: d["rule_results"][0].update(path="elsewhere")),
    "extra rule field": corrupt(lambda d: d["rule_results"][0].update(value=1)),
    "passing result omitting a rule": corrupt(lambda d: d["rule_results"].pop() and None),
    "overall pass not the conjunction": corrupt(
        lambda d: d["rule_results"][0].update(passed=False)
    ),
    "empty reason code": corrupt(lambda d: d["rule_results"][0].update(reason_code="")),
    "overlong reason code": corrupt(lambda d: d["rule_results"][0].update(reason_code="R" * 129)),
    "non-boolean passed": corrupt(lambda d: d.update(passed=1)),
    "non-JSON value": corrupt(lambda d: d["rule_results"][0].update(reason_code=float("nan"))),
    "not an object": corrupt(lambda d: ["nope"]),
}


@pytest.mark.parametrize("hook", FAIL_CLOSED.values(), ids=FAIL_CLOSED.keys())
def test_malformed_evaluator_output_fails_closed(hook: Hook) -> None:
    error = error_of(make_policy(3), RESPONSE, hook)
    assert error.code == "ORDER_CHECK_INVALID"
    assert error.policy_id == "peers"


def test_oversized_evaluator_result_is_too_large() -> None:
    hook = corrupt(lambda d: {**d, "pad": "x" * 1_000_001})
    assert error_of(make_policy(2), RESPONSE, hook).code == "ORDER_CHECK_TOO_LARGE"


def test_evaluation_result_objects_are_accepted_from_hooks() -> None:
    def typed(policy: Policy, response: dict[str, Any]) -> Any:
        return evaluate_response(policy, response)

    assert report(typed)["status"] == "PRESENTATION_ONLY_DRIFT"


def test_report_over_its_byte_limit_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(precedence, "REPORT_BYTE_LIMIT", 200)
    assert error_of(make_policy(2), RESPONSE).code == "ORDER_CHECK_TOO_LARGE"


def test_first_order_is_the_declared_order_and_orders_are_lexicographic() -> None:
    seen: list[list[str]] = []

    def recording(policy: Policy, response: dict[str, Any]) -> Any:
        seen.append([rule.rule_id for rule in policy.rules])
        return builtin_document(policy, response)

    report(recording)
    orders = seen[::3]
    assert orders == [list(p) for p in itertools.permutations(["r0", "r1", "r2"])]
