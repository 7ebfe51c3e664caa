"""The pure core of judging live traffic: sampling, settling, keys and the summary."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from canon.core.online import (
    Decision,
    DecisionKind,
    budget_day,
    once_key,
    sample_point,
    sampled,
    settled,
    summarize,
    trend,
)
from canon.errors import InputError, UsageError

IDS = [f"{i * 2654435761 % (1 << 128):032x}" for i in range(10_000)]


def _binomial_99(n: int, p: float) -> tuple[float, float]:
    spread = 2.5758 * math.sqrt(n * p * (1 - p))
    return n * p - spread, n * p + spread


@pytest.mark.parametrize("rate", [0.05, 0.5])
def test_the_sampled_share_of_10000_ids_is_within_its_binomial_99_interval(rate: float) -> None:
    count = sum(sampled(trace_id, rate) for trace_id in IDS)
    low, high = _binomial_99(len(IDS), rate)
    assert low <= count <= high


def test_every_worker_process_samples_the_same_ids() -> None:
    code = (
        "import sys\nfrom canon.core.online import sampled\n"
        "ids=[f'{i * 2654435761 % (1 << 128):032x}' for i in range(10000)]\n"
        "sys.stdout.write(''.join('1' if sampled(t, 0.05, 'team') else '0' for t in ids))"
    )
    here = "".join("1" if sampled(t, 0.05, "team") else "0" for t in IDS)
    for seed in ("1", "2"):  # str hashing differs between the processes; sampling must not
        env = {"PYTHONHASHSEED": seed, "PATH": ""}
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, text=True)
        assert out.stdout == here, out.stderr


def test_sampling_depends_on_the_salt_and_ignores_the_ids_case() -> None:
    assert sample_point(IDS[7].upper()) == sample_point(IDS[7])
    assert sample_point(IDS[7], "a") != sample_point(IDS[7], "b")
    assert not sampled(IDS[7], 0.0) and sampled(IDS[7], 1.0)


@pytest.mark.parametrize("rate", [-0.1, 1.5, True, float("nan")])
def test_a_rate_outside_0_to_1_is_refused(rate: float) -> None:
    with pytest.raises(UsageError, match="--sample"):
        sampled(IDS[0], rate)


def test_a_trace_settles_after_its_root_ended_and_a_quiet_window_or_at_the_maximum() -> None:
    at = {"first_seen": 100.0, "last_seen": 110.0, "settle": 30.0, "settle_max": 600.0}
    assert not settled(139.0, root_ended=True, **at)
    assert settled(140.0, root_ended=True, **at)
    assert not settled(500.0, root_ended=False, **at)  # no root yet: wait for the maximum
    assert settled(700.0, root_ended=False, **at)


def test_the_once_key_names_trace_contract_and_constitution() -> None:
    key = once_key("ABCD", "c" * 64, "d" * 64)
    assert key == f"abcd:{'c' * 16}:{'d' * 16}"
    assert key != once_key("abcd", "e" * 64, "d" * 64)
    assert key != once_key("abcd", "c" * 64, "e" * 64)


def test_the_budget_day_is_the_utc_date() -> None:
    assert budget_day(0.0) == "1970-01-01"
    assert budget_day(86_399.0) == "1970-01-01" and budget_day(86_400.0) == "1970-01-02"


def _judged(verdict: str, at: float, **principles: bool) -> Decision:
    return Decision(DecisionKind.JUDGED, "t", at, verdict, 0.9, principles, cost=0.01)


def test_a_decision_round_trips_and_bad_data_names_where_it_was() -> None:
    decision = _judged("canon", 5.0, P1=True, P2=False)
    assert Decision.from_dict(decision.to_dict(), "x") == decision
    dropped = Decision(DecisionKind.BUDGET_DROPPED, "t", 1.0)
    assert Decision.from_dict(dropped.to_dict(), "x") == dropped
    for bad, words in (
        ({"kind": "guessed", "trace_id": "t", "at": 1}, "not one of"),
        ({"kind": "judged", "trace_id": "t", "at": 1}, "canon or non_canon"),
        ({"kind": "late", "at": 1}, "trace_id"),
        ({"kind": "late", "trace_id": "t", "at": "noon"}, "'at'"),
        ({"kind": "late", "trace_id": "t", "at": 1, "cost": -1}, "'cost'"),
        ([], "JSON object"),
    ):
        with pytest.raises(InputError, match=words) as caught:
            Decision.from_dict(bad, "records/a.json")
        assert "records/a.json" in str(caught.value)


def test_the_summary_counts_kinds_and_gives_wilson_intervals_per_principle() -> None:
    decisions = [
        _judged("canon", 1.0, P1=True, P2=True),
        _judged("non_canon", 2.0, P1=True, P2=False),
        _judged("canon", 3.0, P1=True, P10=True),
        Decision(DecisionKind.SAMPLED_OUT, "u", 4.0),
        Decision(DecisionKind.LATE, "u", 5.0, cause="1 span"),
        Decision(DecisionKind.UNSCORED, "v", 6.0, cause="JudgeUnavailableError: 503"),
    ]
    summary = summarize(decisions)
    assert summary.counts[DecisionKind.JUDGED] == 3 and summary.traces == 5
    assert (summary.canon.held, summary.canon.judged) == (2, 3)
    assert list(summary.principles) == ["P1", "P2", "P10"]
    p2 = summary.principles["P2"]
    assert (p2.held, p2.judged) == (1, 2) and 0 < p2.low < 0.5 < p2.high < 1
    assert summary.cost == pytest.approx(0.03)
    periods = trend(decisions, 2.0)
    assert [start for start, _ in periods] == [0.0, 2.0, 4.0, 6.0]
    assert periods[1][1].canon.judged == 2
    with pytest.raises(UsageError):
        trend(decisions, 0.0)


def test_a_reservation_fits_beside_the_spend_or_is_refused() -> None:
    from canon.core.online import reservation

    assert reservation(1.0, 0.0, 0.0, 0.0, 0) == 0.0  # the first trace goes alone
    assert reservation(1.0, 0.0, 0.0, 0.0, 1) == "wait"  # while it runs, the rest wait
    assert reservation(1.0, 0.6, 0.2, 0.2, 1) == 0.2
    assert reservation(1.0, 0.6, 0.2, 0.3, 1) is None
    assert reservation(1.0, 1.0, 0.0, 0.0, 0) is None
