"""Brier score, its decomposition, reliability bins and ECE, against hand-computed values."""

from __future__ import annotations

import re

import pytest

from canon.core.calibration import (
    FEW_LABELS,
    Forecast,
    brier_decomposition,
    brier_score,
    calibrated_ece,
    calibration,
    calibration_to_data,
    expected_calibration_error,
    reliability_bins,
)
from canon.core.rubric import Choice, Question
from canon.errors import UsageError

GRADED = (Choice("yes", 1.0), Choice("partly", 0.5), Choice("no", 0.0), Choice("n/a", None))
P2 = Question("P2", "principle", "Uphold it?", GRADED, "Escalate.", "escalate")
LABELS = [c.label for c in GRADED]

# Eight answers and the person's label for each (the CLI test uses the same numbers):
# per answer, sum over labels of (p - [label is the person's])^2.
EIGHT = [
    Forecast({"no": 0.9, "yes": 0.1}, "no"),  # 0.01 + 0.01 = 0.02; conf 0.9, right
    Forecast({"no": 0.6, "yes": 0.4}, "no"),  # 0.16 + 0.16 = 0.32; conf 0.6, right
    Forecast({"yes": 0.7, "no": 0.3}, "no"),  # 0.49 + 0.49 = 0.98; conf 0.7, wrong
    Forecast({"no": 0.8, "yes": 0.2}, "yes"),  # 0.64 + 0.64 = 1.28; conf 0.8, wrong
    Forecast({"yes": 1.0}, "yes"),  # 0; conf 1.0, right
    Forecast({"yes": 0.9, "partly": 0.1}, "yes"),  # 0.01 + 0.01 = 0.02; conf 0.9, right
    Forecast({"yes": 0.6, "partly": 0.4}, "yes"),  # 0.16 + 0.16 = 0.32; conf 0.6, right
    Forecast({"yes": 0.7, "no": 0.3}, "yes"),  # 0.09 + 0.09 = 0.18; conf 0.7, right
]
# 3.12 / 8
EIGHT_BRIER = 0.39
# bins: [0.6, 0.7) two right at 0.6 (gap 0.4 each); [0.7, 0.8) one right one wrong at 0.7
# (accuracy 0.5, gap 0.2 each); [0.8, 0.9) one wrong at 0.8 (gap 0.8); [0.9, 1.0] three
# right at 0.9, 0.9, 1.0 (mean 2.8/3, gap 0.2/3 each): (0.8 + 0.4 + 0.8 + 0.2) / 8
EIGHT_ECE = 0.275


def test_the_brier_score_of_eight_answers_matches_the_hand_sum():
    assert brier_score(EIGHT, LABELS) == pytest.approx(EIGHT_BRIER)


def test_a_certain_wrong_answer_scores_two_and_a_certain_right_one_zero():
    assert brier_score([Forecast({"yes": 1.0}, "no")], LABELS) == pytest.approx(2.0)
    assert brier_score([Forecast({"no": 1.0}, "no")], LABELS) == 0.0
    # an even spread over four labels: 3 * (1/4)^2 + (3/4)^2
    spread = Forecast(dict.fromkeys(LABELS, 0.25), "yes")
    assert brier_score([spread], LABELS) == pytest.approx(0.75)


def test_masses_are_normalised_before_scoring():
    assert brier_score([Forecast({"yes": 3.0, "no": 1.0}, "yes")], LABELS) == pytest.approx(0.125)


def test_the_decomposition_adds_up_to_the_brier_score_and_matches_hand_values():
    # Two forecasts, each given twice: {yes: .8, no: .2} seen with yes, yes; {yes: .5, no: .5}
    # seen with yes, no. Base rate yes 3/4, no 1/4: uncertainty 2 * 3/16 = 0.375.
    # reliability: (2 * (0.04 + 0.04) + 2 * 0) / 4 = 0.04
    # resolution: (2 * ((1 - .75)^2 + (0 - .25)^2) + 2 * ((.5 - .75)^2 + (.5 - .25)^2)) / 4
    #   = (2 * 0.125 + 2 * 0.125) / 4 = 0.125
    sure, even = {"yes": 0.8, "no": 0.2}, {"yes": 0.5, "no": 0.5}
    forecasts = [
        Forecast(sure, "yes"),
        Forecast(sure, "yes"),
        Forecast(even, "yes"),
        Forecast(even, "no"),
    ]
    reliability, resolution, uncertainty, distinct = brier_decomposition(forecasts, LABELS)
    assert (reliability, resolution, uncertainty, distinct) == pytest.approx(
        (0.04, 0.125, 0.375, 2)
    )
    assert brier_score(forecasts, LABELS) == pytest.approx(reliability - resolution + uncertainty)
    parts = brier_decomposition(EIGHT, LABELS)
    assert parts is not None and parts[3] == 7  # r3 and r8 gave the same forecast
    assert parts[0] - parts[1] + parts[2] == pytest.approx(EIGHT_BRIER)


def test_bins_hold_mean_confidence_accuracy_and_count_and_the_ece_weights_them():
    found = calibration(P2, EIGHT)
    assert found.n == 8 and found.brier == pytest.approx(EIGHT_BRIER)
    assert found.ece == pytest.approx(EIGHT_ECE)
    held = [x for b in found.bins if b.count for x in (b.low, b.count, b.confidence, b.accuracy)]
    assert held == pytest.approx(
        [0.6, 2, 0.6, 1.0, 0.7, 2, 0.7, 0.5, 0.8, 1, 0.8, 0.0, 0.9, 3, 2.8 / 3, 1.0]
    )
    assert len(found.bins) == 10 and sum(b.count for b in found.bins) == 8
    assert not found.one_hot and found.few and FEW_LABELS == 30


def test_a_confidence_on_a_bin_edge_opens_that_bin_and_one_falls_in_the_last():
    found = reliability_bins([(0.3, True), (1.0, False), (0.0, True)], bins=10)
    assert [b.count for b in found] == [1, 0, 0, 1, 0, 0, 0, 0, 0, 1]
    assert expected_calibration_error(found) == pytest.approx((1.0 + 0.7 + 1.0) / 3)
    assert expected_calibration_error(reliability_bins([])) is None


def test_a_one_hot_judge_gets_calibration_that_is_plain_accuracy():
    # a scripted judge: right on 3 of 4
    forecasts = [
        Forecast({"yes": 1.0}, "yes"),
        Forecast({"no": 1.0}, "no"),
        Forecast({"no": 1.0}, "no"),
        Forecast({"yes": 1.0}, "no"),
    ]
    found = calibration(P2, forecasts)
    assert found.one_hot
    assert found.brier == pytest.approx(2 * (1 - 0.75))
    assert found.ece == pytest.approx(1 - 0.75)
    assert [b.count for b in found.bins][-1] == 4


def test_no_forecasts_measure_nothing():
    found = calibration(P2, [])
    assert found.n == 0 and found.brier is None and found.ece is None and not found.one_hot
    assert calibration_to_data(found)["brier"] is None


def test_the_plain_data_rounds_and_drops_bins_for_the_record():
    full = calibration_to_data(calibration(P2, EIGHT))
    assert full["brier"] == EIGHT_BRIER and full["ece"] == EIGHT_ECE and full["ece_bins"] == 10
    assert full["few_labels"] is True and full["one_hot"] is False
    assert [b["n"] for b in full["bins"]] == [0, 0, 0, 0, 0, 0, 2, 2, 1, 3]
    assert "bins" not in calibration_to_data(calibration(P2, EIGHT), bins=False)


@pytest.mark.parametrize(
    ("forecast", "message"),
    [
        (Forecast({"maybe": 1.0}, "yes"), "forecast labels ['maybe'] are not among"),
        (Forecast({"yes": 1.0}, "maybe"), "label 'maybe' is not among"),
        (Forecast({"yes": 0.0}, "yes"), "needs positive mass"),
    ],
)
def test_a_forecast_outside_the_questions_labels_is_refused(forecast, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        calibration(P2, [forecast])


def test_bins_refuse_a_confidence_outside_zero_to_one_and_a_count_below_one():
    with pytest.raises(UsageError, match="a confidence must be in"):
        reliability_bins([(1.5, True)])
    with pytest.raises(UsageError, match="need a count >= 1"):
        reliability_bins([], bins=0)


def test_a_calibrated_judges_ece_bound_matches_small_cases_worked_by_hand():
    # one bin, two answers at 0.5: right 0, 1 or 2 times (1/4, 1/2, 1/4), ECE 0.5, 0, 0.5;
    # its 95th percentile is 0.5
    assert calibrated_ece([0.5, 0.5]) == 0.5
    # a judge sure of every answer and right every time shows 0
    assert calibrated_ece([1.0] * 5) == 0.0
    assert calibrated_ece([]) is None
    # seeded: the same answers give the same bound
    assert calibrated_ece([0.6, 0.7, 0.9] * 4) == calibrated_ece([0.6, 0.7, 0.9] * 4)


def test_the_calibrated_bound_shrinks_with_n_as_the_benchmark_measured():
    # bench_calibration.py, 1000 trials: 95th percentile 0.198 at n = 30, 0.116 at n = 100
    step = [0.5 + 0.5 * (i + 0.5) / 100 for i in range(100)]
    small, large = calibrated_ece(step[::3][:30]), calibrated_ece(step)
    assert small is not None and large is not None
    assert 0.15 < small < 0.27 and 0.08 < large < 0.15
    found = calibration(P2, EIGHT)
    assert found.calibrated_ece is not None and found.ece is not None
    assert found.calibrated_ece > 0.2  # eight answers: an ECE of 0.275 is within noise
