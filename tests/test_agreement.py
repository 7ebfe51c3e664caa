"""Cohen's kappa, its bootstrap interval and violation rates, against hand-computed values."""

from __future__ import annotations

import math

import pytest

from canon.core.agreement import (
    LabelPair,
    agreement,
    agreement_interval,
    bootstrap_interval,
    cohen_kappa,
    kappa_interval,
    modal_label,
    violation_labels,
)
from canon.core.rubric import Choice, Question
from canon.core.stats import wilson_ci

GRADED = (
    Choice("yes", 1.0),
    Choice("partly", 0.5),
    Choice("no", 0.0),
    Choice("n/a", None),
)
PRINCIPLE = Question("P2", "principle", "Uphold it?", GRADED, "Escalate.", "escalate")
GATE = Question("G", "gate", "Contradict?", (Choice("yes", 0.0), Choice("no", 1.0)))


def _table(cells: dict[tuple[str, str], int]) -> list[tuple[str, str]]:
    """Label pairs from a contingency table (reference, judged) -> count."""
    return [pair for pair, count in cells.items() for _ in range(count)]


# The two-rater example found in most introductions (50 items): 20 yes/yes, 5 yes/no,
# 10 no/yes, 15 no/no. Observed 0.70, chance 0.5*0.6 + 0.5*0.4 = 0.50, kappa 0.40.
TEXTBOOK = _table({("yes", "yes"): 20, ("yes", "no"): 5, ("no", "yes"): 10, ("no", "no"): 15})


def test_kappa_of_the_textbook_two_by_two_table_is_0_4():
    assert cohen_kappa(TEXTBOOK) == pytest.approx(0.4)


def test_kappa_of_a_three_label_table_matches_the_hand_computation():
    pairs = _table(
        {
            ("yes", "yes"): 25,
            ("yes", "partly"): 2,
            ("yes", "no"): 1,
            ("partly", "yes"): 3,
            ("partly", "partly"): 20,
            ("partly", "no"): 2,
            ("no", "yes"): 1,
            ("no", "partly"): 2,
            ("no", "no"): 14,
        }
    )
    # observed 59/70; row totals 28, 25, 17 and column totals 29, 24, 17 give chance
    # 1701/4900, so kappa = (59*70 - 1701) / (4900 - 1701) = 2429/3199.
    assert cohen_kappa(pairs) == pytest.approx(2429 / 3199)


def test_kappa_is_one_for_perfect_agreement_and_negative_for_systematic_disagreement():
    assert cohen_kappa([("yes", "yes"), ("no", "no"), ("yes", "yes")]) == pytest.approx(1.0)
    # every answer swapped: observed 0, chance 0.5 -> kappa -1
    assert cohen_kappa([("yes", "no"), ("no", "yes")]) == pytest.approx(-1.0)


def test_kappa_is_undefined_when_both_raters_give_one_answer_throughout():
    assert cohen_kappa([("no", "no")] * 5) is None
    assert cohen_kappa([]) is None


def test_kappa_is_zero_when_the_judge_gives_one_answer_and_the_person_varies():
    assert cohen_kappa([("yes", "yes"), ("no", "yes"), ("yes", "yes")]) == pytest.approx(0.0)


def test_the_bootstrap_interval_is_close_to_the_large_sample_one_at_n_50():
    low, high = bootstrap_interval(TEXTBOOK) or (math.nan, math.nan)
    # Cohen's large-sample standard error sqrt(po (1 - po) / (n (1 - pe)^2)):
    # sqrt(0.21 / 12.5) = 0.1296, so 0.40 -/+ 1.96 * 0.1296 = [0.146, 0.654].
    se = math.sqrt(0.7 * 0.3 / (50 * 0.25))
    assert low == pytest.approx(0.4 - 1.96 * se, abs=0.06)
    assert high == pytest.approx(0.4 + 1.96 * se, abs=0.06)
    assert low < 0.4 < high


def test_the_bootstrap_interval_repeats_exactly_and_moves_with_the_seed():
    assert kappa_interval(TEXTBOOK) == kappa_interval(TEXTBOOK)
    assert kappa_interval(TEXTBOOK, seed=1) != kappa_interval(TEXTBOOK)


def test_perfect_agreement_on_few_labels_still_leaves_room_below_one():
    perfect = [("yes", "yes")] * 6 + [("no", "no")] * 6
    # Every bootstrap resample agrees perfectly, so the bootstrap alone says [1, 1]; the
    # Wilson interval on 12/12 agreeing, [0.7575, 1], carried onto kappa with chance 0.5,
    # gives (0.7575 - 0.5) / 0.5 = 0.515 as the lower end.
    assert bootstrap_interval(perfect) == (1.0, 1.0)
    low, high = kappa_interval(perfect) or (math.nan, math.nan)
    assert low == pytest.approx((wilson_ci(12, 12)[0] - 0.5) / 0.5) and high == 1.0
    assert low == pytest.approx(0.515, abs=0.001)


def test_an_interval_is_undefined_when_both_raters_give_one_answer_throughout():
    assert kappa_interval([("no", "no")] * 10) is None
    assert bootstrap_interval([("yes", "yes"), ("no", "no")][:1]) is None  # nothing to resample
    assert agreement_interval([]) is None


def test_canons_interval_is_the_wider_of_the_bootstrap_and_the_wilson_one():
    boot = bootstrap_interval(TEXTBOOK)
    carried = agreement_interval(TEXTBOOK)
    assert boot is not None and carried is not None
    assert kappa_interval(TEXTBOOK) == (min(boot[0], carried[0]), max(boot[1], carried[1]))
    # Wilson on 35/50 agreeing, carried with chance 0.5: (0.5625 - 0.5)/0.5 and so on
    low, high = wilson_ci(35, 50)
    assert carried == pytest.approx(((low - 0.5) / 0.5, (high - 0.5) / 0.5))


def test_the_interval_stays_inside_minus_one_and_one_on_a_tiny_sample():
    pairs = [("yes", "yes"), ("no", "no"), ("yes", "no"), ("no", "no")]
    low, high = kappa_interval(pairs) or (math.nan, math.nan)
    assert -1.0 <= low <= high <= 1.0


def test_violations_are_the_lowest_scored_choices_and_the_gates_contradiction():
    assert violation_labels(PRINCIPLE) == ("no",)
    assert violation_labels(GATE) == ("yes",)


def test_agreement_counts_recall_precision_confusion_and_keeps_every_disagreement():
    pairs = [
        LabelPair("a1", "no", "no", "It decided the refund itself."),
        LabelPair("a2", "no", "yes", "It handed the case on."),
        LabelPair("a3", "yes", "yes"),
        LabelPair("a4", "yes", "no", "It never mentions a human."),
        LabelPair("a5", "n/a", "n/a"),
    ]
    found = agreement(PRINCIPLE, pairs)
    assert found.n == 5 and found.agreement == pytest.approx(3 / 5)
    # person's violations: a1, a2; the judge's: a1, a4; both: a1
    assert (found.violation_recall.successes, found.violation_recall.trials) == (1, 2)
    assert (found.violation_precision.successes, found.violation_precision.trials) == (1, 2)
    assert found.violation_recall.interval[0] < 0.5 < found.violation_recall.interval[1]
    assert found.confusion == {
        "n/a": {"n/a": 1},
        "no": {"no": 1, "yes": 1},
        "yes": {"no": 1, "yes": 1},
    }
    assert [(d.key, d.reference, d.judged, d.reason) for d in found.disagreements] == [
        ("a2", "no", "yes", "It handed the case on."),
        ("a4", "yes", "no", "It never mentions a human."),
    ]
    assert found.label == "P2 [escalate]"
    # observed 3/5; reference (no 2, yes 2, n/a 1), judged (no 2, yes 2, n/a 1):
    # chance (4 + 4 + 1)/25 = 9/25, kappa (15/25 - 9/25)/(16/25) = 6/16
    assert found.kappa == pytest.approx(6 / 16)


def test_no_violations_on_either_side_leaves_recall_and_precision_without_trials():
    found = agreement(GATE, [LabelPair("a", "no", "no"), LabelPair("b", "no", "no")])
    assert found.violation_recall.trials == 0 and found.violation_recall.value is None
    assert found.kappa is None and found.kappa_interval is None


def test_the_modal_label_breaks_ties_by_sorted_label():
    assert modal_label({"yes": 0.25, "no": 0.75}) == "no"
    assert modal_label((("yes", 0.5), ("no", 0.5))) == "no"
    assert modal_label({}) is None
