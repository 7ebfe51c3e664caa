"""The usage value: sums, unknown costs, and the per-kind summary."""

from __future__ import annotations

from canon.core.usage import Usage, format_cost, summarize, total


def test_an_unknown_cost_makes_the_sum_unknown_never_zero():
    assert (Usage(1, 10, 2, cost=0.5) + Usage(1, 10, 2, cost=None)).cost is None
    assert format_cost(None) == "unknown"
    assert Usage(cost=None).as_data()["cost_usd"] == "unknown"


def test_sums_add_every_count():
    spent = total([Usage(1, 10, 2, 4, 0.25, 1), Usage(2, 5, 1, 0, 0.5)])
    assert spent == Usage(3, 15, 3, 4, 0.75, 1)


def test_summary_counts_answers_without_a_call_apart_and_splits_by_kind():
    summary = summarize(
        [("facet", Usage(1, 10, 2, cost=0.1)), ("gate", None), ("facet", Usage(1, 10, 2, cost=0.2))]
    )
    assert summary.reused == 1
    assert summary.by_kind["facet"].calls == 2 and "gate" not in summary.by_kind
    assert summary.run.cost == 0.1 + 0.2
    assert "2 call(s), 20 prompt + 4 completion tokens, cost $0.3000" in summary.line()
    assert summary.properties()["usage.facet.calls"] == "2"
