from __future__ import annotations

import pytest

from canon import Answer, relevant_questions, wilson_ci
from canon.core.gate_outcome import GateOutcome
from canon.core.rubric import Choice, Question
from canon.core.scoring import (
    fails_on_evidence,
    failure_message,
    gate_tripped,
    judge_verdict,
    score_cell,
    stopped_verdict,
    unscored_cell,
)
from canon.errors import JudgeError, UsageError

GRADED = (
    Choice("yes", 1.0),
    Choice("partly", 0.5),
    Choice("no", 0.0),
    Choice("n/a", None),
)
FACET = Question("mission", "facet", "Does it serve the mission?", GRADED)
OTHER = Question("scope", "facet", "Does it stay in scope?", GRADED)
GATE = Question("G", "gate", "Does it contradict?", (Choice("yes", 0.0), Choice("no", 1.0)))
PRINCIPLE = Question("P1", "principle", "Uphold 'be kind'?", GRADED, subject="be kind")


def test_cell_score_is_the_expected_choice_score_with_na_mass_excluded():
    cell = score_cell(FACET, Answer({"yes": 0.5, "no": 0.25, "n/a": 0.25}))
    assert cell.state == "answered"
    assert cell.score == pytest.approx(0.5 / 0.75)
    assert cell.confidence == pytest.approx(0.5)


def test_all_na_mass_makes_a_na_cell_that_is_excluded_from_the_mean():
    na = score_cell(FACET, Answer({"n/a": 1.0}))
    assert na.state == "na" and na.score is None
    result = judge_verdict("k", [na, score_cell(OTHER, Answer({"partly": 1.0}))], 0.4)
    assert result.score == pytest.approx(0.5)  # not (0 + 0.5) / 2


def test_labels_match_case_insensitively_and_masses_normalize():
    cell = score_cell(FACET, Answer({"YES": 2.0, "No": 2.0}))
    assert cell.score == pytest.approx(0.5)
    assert dict(cell.distribution) == {"yes": 0.5, "no": 0.5}


@pytest.mark.parametrize(
    ("distribution", "fragment"),
    [
        ({"maybe": 1.0}, "not one of its choices"),
        ({"yes": -1.0}, "finite number >= 0"),
        ({"yes": 0.0}, "no answer mass"),
        ({"yes": float("nan")}, "finite number >= 0"),
        ({"yes": "1"}, "not a number"),
    ],
)
def test_malformed_judge_answers_are_judge_errors(distribution, fragment):
    with pytest.raises(JudgeError, match=fragment):
        score_cell(FACET, Answer(distribution))


def test_gate_question_cannot_be_answered_na():
    gate = Question("G", "gate", "?", (Choice("yes", 0.0), Choice("no", 1.0), Choice("n/a", None)))
    with pytest.raises(JudgeError, match="cannot be answered n/a"):
        score_cell(gate, Answer({"n/a": 1.0}))


def test_nscp_gate_caps_a_high_mean_and_makes_the_artifact_non_canon():
    cells = [score_cell(FACET, Answer({"yes": 1.0})) for _ in range(5)]
    cells.append(score_cell(GATE, Answer({"yes": 0.7, "no": 0.3})))
    result = judge_verdict("k", cells, threshold=0.2)
    assert result.gated
    assert result.raw_score == pytest.approx((5 + 0.3) / 6)
    assert result.score == pytest.approx(0.3)  # capped at the gate question's own score
    assert not result.canon
    assert result.reasons[0].startswith("NSCP gate")
    assert "Does it contradict?" in failure_message(result)


def test_gate_holds_when_contradiction_mass_is_below_half():
    cell = score_cell(GATE, Answer({"yes": 0.4, "no": 0.6}))
    assert not gate_tripped(cell)
    assert gate_tripped(score_cell(GATE, Answer({"yes": 0.5, "no": 0.5})))  # a tie fails closed


def test_score_below_threshold_is_non_canon_and_names_the_lowest_questions():
    cells = [
        score_cell(FACET, Answer({"no": 1.0})),
        score_cell(OTHER, Answer({"partly": 1.0})),
        score_cell(GATE, Answer({"no": 1.0})),
    ]
    result = judge_verdict("k", cells, threshold=0.85)
    assert not result.canon and not result.gated
    assert result.score == pytest.approx(0.5)
    message = failure_message(result)
    assert message.startswith("non-canon artifact k: score 0.500 is below the threshold 0.850")
    assert "mission (0.00)" in message.splitlines()[2]


def test_unscored_cells_never_count_as_pass_or_na():
    cells = [
        score_cell(FACET, Answer({"yes": 1.0})),
        unscored_cell(OTHER, "judge unavailable after 3 attempts"),
        score_cell(GATE, Answer({"no": 1.0})),
    ]
    result = judge_verdict("k", cells, threshold=0.5)
    assert result.score == pytest.approx(1.0)
    assert not result.canon
    assert [c.id for c in result.unscored] == ["scope"]
    assert "1 of 3 questions unscored" in result.reasons[0]


def test_unscored_gate_question_can_never_yield_canon():
    cells = [score_cell(FACET, Answer({"yes": 1.0})), unscored_cell(GATE, "timeout")]
    result = judge_verdict("k", cells, threshold=0.0)
    assert not result.canon and not result.gated


def test_a_failing_deterministic_gate_stops_the_artifact_with_its_reasons():
    outcome = GateOutcome("policy", "fail", ("rule 'a' FIELD_MISSING",))
    result = stopped_verdict("k", 0.8, [outcome, GateOutcome("contract", "warn", ("late",))])
    assert not result.canon
    assert result.stopped_by == "policy"
    assert result.score is None and result.cells == ()
    assert result.reasons == ("policy gate failed: rule 'a' FIELD_MISSING",)
    assert result.notes == ("contract gate warning: late",)


def test_relevant_questions_keeps_applicable_ones_and_reports_excluded_principles():
    cells = [
        score_cell(FACET, Answer({"yes": 1.0})),
        score_cell(PRINCIPLE, Answer({"n/a": 1.0})),
        score_cell(GATE, Answer({"no": 1.0})),
    ]
    result = judge_verdict("k", cells, threshold=0.5)
    assert relevant_questions(result) == (FACET, GATE)
    kept, excluded = relevant_questions(result, report_excluded=True)
    assert kept == (FACET, GATE)
    assert excluded == ("be kind",)


def test_wilson_interval_of_nothing_is_the_whole_range():
    assert wilson_ci(0, 0) == (0.0, 1.0)


def test_wilson_interval_matches_a_known_value_and_stays_in_bounds():
    low, high = wilson_ci(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4)
    assert high == pytest.approx(0.9433, abs=1e-4)
    assert wilson_ci(10, 10)[1] == 1.0 and wilson_ci(0, 10)[0] == 0.0


@pytest.mark.parametrize("args", [(3, 2), (-1, 2), (1.5, 2), (True, 2)])
def test_wilson_interval_refuses_impossible_counts(args):
    with pytest.raises(UsageError):
        wilson_ci(*args)


def test_only_evidence_fails_an_artifact_and_a_judge_outage_alone_does_not():
    yes, no = Answer({"yes": 1.0}), Answer({"no": 1.0})
    canon = judge_verdict("k", [score_cell(FACET, yes), score_cell(GATE, no)], 0.5)
    below = judge_verdict("k", [score_cell(FACET, no), score_cell(GATE, no)], 0.6)  # mean 0.5
    gated = judge_verdict("k", [score_cell(FACET, yes), score_cell(GATE, yes)], 0.5)
    nothing_applied = judge_verdict("k", [score_cell(FACET, Answer({"n/a": 1.0}))], 0.5)
    outage = judge_verdict("k", [unscored_cell(FACET, "down"), unscored_cell(GATE, "down")], 0.5)
    stopped = stopped_verdict("k", 0.5, [GateOutcome("policy", "fail", ("rule r1",))])
    assert not fails_on_evidence(canon) and canon.canon
    assert fails_on_evidence(below) and fails_on_evidence(gated) and fails_on_evidence(stopped)
    assert fails_on_evidence(nothing_applied) and not nothing_applied.canon
    assert not fails_on_evidence(outage) and not outage.canon
