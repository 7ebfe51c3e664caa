from __future__ import annotations

import dataclasses
import itertools
import math

import pytest
from scipy import stats

from canon.core.artifact import text_digest
from canon.core.baseline import (
    LEGACY_FORMAT,
    ArtifactRecord,
    Baseline,
    baseline_from_results,
)
from canon.core.compare import (
    SOLID_CONFIDENCE,
    SOLID_SATISFIED,
    SOLID_VIOLATED,
    gate,
    provenance_notes,
)
from canon.core.constitution import Constitution, Principle
from canon.core.evidence import (
    DecisionRule,
    Evidence,
    add_answer,
    failed_reask,
    open_evidence,
)
from canon.core.gate_outcome import GateOutcome
from canon.core.scoring import (
    Answer,
    ArtifactResult,
    judge_verdict,
    score_cell,
    stopped_verdict,
    unscored_cell,
)
from canon.core.settle import settle
from canon.core.significance import ALPHA, sign_flip_drop_test, welch_drop_test
from canon.core.stats import wilson_ci
from canon.project.store import load_rubric

DRIFT_ALPHA = DecisionRule().drift_alpha

RUBRIC = load_rubric()
CONSTITUTION = Constitution(
    "Serve customers well.", (Principle("Be honest."), Principle("Escalate refunds."))
)
QUESTIONS = RUBRIC.questions_for(CONSTITUTION)
BY_ID = {q.id: q for q in QUESTIONS}


def _result(key: str, threshold: float = 0.5, **replies: object) -> ArtifactResult:
    """An artifact where every facet says yes and the gate says no, unless told otherwise."""
    cells = []
    for q in QUESTIONS:
        reply = replies.get(q.id, "no" if q.kind == "gate" else "yes")
        distribution = {reply: 1.0} if isinstance(reply, str) else reply
        cells.append(score_cell(q, Answer(distribution)))  # type: ignore[arg-type]
    return judge_verdict(key, cells, threshold)


def _settle(result: ArtifactResult, evidence: dict[tuple[str, str], Evidence]) -> ArtifactResult:
    """The result as confirmation leaves it: failing only on confirmed evidence."""
    return settle(result, result.cells, {q: e for (k, q), e in evidence.items() if k == result.key})


def _recorded(results: list[ArtifactResult], asks: int = 2) -> Baseline:
    """A baseline as accept records it: every cell asked twice unless told otherwise."""
    return baseline_from_results(
        results,
        rubric=RUBRIC,
        judge="mock",
        constitution=CONSTITUTION.digest,
        threshold=0.5,
        asks={(r.key, c.id): asks for r in results for c in r.cells},
    )


def _scored(key: str, score: float) -> ArtifactResult:
    return ArtifactResult(
        key=key, canon=True, score=score, raw_score=score, gated=False, threshold=0.0
    )


def _scores_baseline(scores: dict[str, float]) -> Baseline:
    records = {
        k: ArtifactRecord(score=s, gated=False, canon=True, questions={}) for k, s in scores.items()
    }
    return Baseline(2, "cdt", RUBRIC.version, RUBRIC.fingerprint, "mock", None, 0.0, records)


def test_solidity_thresholds_are_the_documented_ones():
    assert (SOLID_SATISFIED, SOLID_VIOLATED, SOLID_CONFIDENCE, ALPHA) == (0.75, 0.25, 0.7, 0.05)


def test_a_solid_flip_from_satisfied_to_violated_is_a_pending_regression():
    comparison = gate([_result("a", P2="no")], _recorded([_result("a")]), 0.5)
    (flip,) = comparison.flips
    assert (flip.key, flip.question, flip.status) == ("a", "P2", "pending")
    assert flip.text == "Escalate refunds."
    assert comparison.failed and comparison.status == "regressed"


def test_a_soft_baseline_cell_never_fires_a_flip():
    partly = _recorded([_result("a", P2="partly")])
    unsure = _recorded([_result("a", P2={"yes": 0.6, "no": 0.4})])
    for baseline in (partly, unsure):
        comparison = gate([_result("a", P2="no")], baseline, 0.5)
        assert comparison.flips == ()


def test_a_soft_current_cell_never_fires_a_flip():
    comparison = gate([_result("a", P2={"no": 0.6, "yes": 0.4})], _recorded([_result("a")]), 0.5)
    assert comparison.flips == ()


def test_a_changed_principle_subject_is_skipped_with_a_note():
    baseline = _recorded([_result("a"), _result("b")])
    reordered = Constitution(CONSTITUTION.mission, CONSTITUTION.principles[::-1])
    cells = [
        score_cell(q, Answer({"no" if q.kind == "gate" or q.id == "P1" else "yes": 1.0}))
        for q in RUBRIC.questions_for(reordered)
    ]
    comparison = gate([judge_verdict("a", cells, 0.5), _result("b")], baseline, 0.5)
    assert comparison.flips == ()
    changed = [n for n in comparison.notes if "different principle" in n]
    assert len(changed) == 2  # reversing two principles moves both P1 and P2
    note = changed[0]
    assert "question P1" in note and "'Be honest.'" in note and "canon accept" in note
    assert "2 artifact(s)" not in note and "1 artifact(s)" in note


def test_a_legacy_baseline_skips_layer_1_and_gates_on_the_mean():
    legacy = Baseline(
        LEGACY_FORMAT,
        "cdt",
        RUBRIC.version,
        None,
        None,
        None,
        None,
        {k: ArtifactRecord(score=1.0, gated=False) for k in "abcdefghij"},
    )
    results = [_result(k, P2="no", P1="no") for k in "abcdefghij"]
    comparison = gate(results, legacy, 0.5)
    assert comparison.flips == ()
    assert any("format 1" in n and "canon accept" in n for n in comparison.notes)
    assert comparison.drift.regressed  # 1.0 -> 0.75 on all ten: p = 2**-10


def test_new_and_missing_artifacts_are_notes_not_failures():
    comparison = gate(
        [_result("a"), _result("new")], _recorded([_result("a"), _result("old")]), 0.5
    )
    assert comparison.new == ("new",) and comparison.missing == ("old",)
    assert comparison.status == "conforms"
    assert any("new artifact" in n and "new" in n for n in comparison.notes)
    assert any("not in this run: old" in n for n in comparison.notes)


def test_artifacts_are_matched_by_key_not_position():
    baseline = _recorded([_result("a"), _result("b", P2="partly")])
    comparison = gate([_result("b", P2="no"), _result("a", P2="no")], baseline, 0.5)
    assert [f.key for f in comparison.flips] == ["a"]


def test_gate_on_an_empty_result_list_raises_value_error():
    with pytest.raises(ValueError, match="nothing was checked"):
        gate([], _recorded([_result("a")]), 0.5)


def test_gate_refuses_repeated_keys_and_bad_tolerance():
    with pytest.raises(ValueError, match="keys repeat: a"):
        gate([_result("a"), _result("a")], _recorded([_result("a")]), 0.5)
    with pytest.raises(ValueError, match="tolerance must be a number"):
        gate([_result("a")], _recorded([_result("a")]), 0.5, tolerance=2)


def test_a_non_canon_current_artifact_fails_the_check():
    baseline = _recorded([_result("a"), _result("b")])
    stopped = stopped_verdict("b", 0.5, (GateOutcome("contract", "fail", ("no lookup",)),))
    comparison = gate([_result("a", G="yes"), stopped], baseline, 0.5)
    reasons = {n.key: n.reasons for n in comparison.non_canon}
    assert reasons["a"][0].startswith("NSCP gate")
    assert reasons["b"] == ("contract gate failed: no lookup",)
    assert comparison.status == "regressed"


def test_a_score_below_the_given_threshold_is_non_canon():
    comparison = gate([_result("a", mission="partly")], _recorded([_result("a")]), 0.99)
    (non_canon,) = comparison.non_canon
    assert "below the threshold 0.990" in non_canon.reasons[0]


def test_unscored_cells_without_a_regression_mean_the_judge_was_unavailable():
    result = _result("a")
    cells = (*result.cells[:-1], unscored_cell(result.cells[-1].question, "timeout"))
    partial = judge_verdict("a", cells, 0.5)
    comparison = gate([partial], _recorded([_result("a")]), 0.5)
    assert comparison.unscored == 1 and comparison.status == "unavailable"


def test_a_tiny_drop_within_tolerance_passes():
    before = {f"k{i}": 0.901 + 0.01 * (i % 3) for i in range(10)}
    after = [_scored(k, s - 0.002) for k, s in before.items()]
    drift = gate(after, _scores_baseline(before), 0.0).drift
    assert drift.drop == pytest.approx(0.002)
    assert not drift.regressed


def test_a_large_but_noisy_drop_is_not_a_regression():
    diffs = [0.5, -0.4, 0.3, -0.3, 0.15, -0.1] * 2
    before = {f"k{i}": 0.5 for i in range(len(diffs))}
    after = [_scored(f"k{i}", 0.5 - d) for i, d in enumerate(diffs)]
    drift = gate(after, _scores_baseline(before), 0.0).drift
    assert drift.drop is not None and drift.drop > drift.tolerance
    assert drift.test.p_value is not None and drift.test.p_value > ALPHA
    assert not drift.regressed
    assert drift.test.minimum_detectable is not None and drift.test.minimum_detectable > drift.drop


def test_a_large_consistent_drop_is_a_regression_and_states_the_80_percent_power_drop():
    before = {f"k{i}": 0.9 for i in range(8)}
    after = [_scored(f"k{i}", 0.8 + 0.005 * (i % 2)) for i in range(8)]
    comparison = gate(after, _scores_baseline(before), 0.0)
    drift = comparison.drift
    assert drift.regressed and comparison.status == "regressed"
    assert drift.test.method == "sign-flip" and drift.test.p_value < DRIFT_ALPHA
    diffs = [0.9 - r.score for r in after]  # type: ignore[operator]
    sd = stats.tstd(diffs)
    quantiles = stats.t.ppf(1 - DRIFT_ALPHA, 7) + stats.t.ppf(0.8, 7)
    assert drift.test.minimum_detectable == pytest.approx(quantiles * sd / math.sqrt(8))
    assert drift.smallest_flaggable == pytest.approx(max(0.02, drift.test.minimum_detectable))
    low, high = drift.test.interval  # type: ignore[misc]
    assert low <= drift.drop <= high and low > 0.09


def test_the_sign_flip_p_value_counts_every_sign_pattern_exactly():
    before, after = [0.9, 0.8, 0.95, 0.7], [0.85, 0.7, 0.9, 0.72]
    test = sign_flip_drop_test(before, after)
    diffs = [b - a for b, a in zip(before, after, strict=True)]
    observed = sum(diffs)
    patterns = itertools.product((-1, 1), repeat=4)
    extreme = sum(
        1
        for signs in patterns
        if sum(s * abs(d) for s, d in zip(signs, diffs, strict=True)) >= observed - 1e-9
    )
    assert test.p_value == pytest.approx(extreme / 16)
    assert test.method == "sign-flip" and "exact over 16" in test.detail


def test_the_sign_flip_test_samples_many_pairs_reproducibly():
    before = [0.9] * 40
    after = [0.9 - (0.01 if i % 3 else -0.005) for i in range(40)]
    first, again = sign_flip_drop_test(before, after), sign_flip_drop_test(before, after)
    assert "Monte Carlo" in first.detail
    assert first.p_value == again.p_value and first.interval == again.interval
    assert first.p_value is not None and first.p_value < 0.01


def test_an_unchanged_run_is_not_a_drop_and_is_underpowered_when_noise_is_large():
    before = {f"k{i}": 0.9 for i in range(6)}
    noisy = [0.2, -0.2, 0.15, -0.15, 0.1, -0.1]
    after = [_scored(f"k{i}", 0.9 - d) for i, d in enumerate(noisy)]
    drift = gate(after, _scores_baseline(before), 0.0).drift
    assert not drift.regressed and drift.underpowered
    assert drift.test.p_value is not None and drift.test.p_value > 0.3


def test_a_constant_drop_over_enough_artifacts_is_beyond_noise():
    before = {f"k{i}": 0.9 for i in range(10)}
    drift = gate([_scored(k, 0.85) for k in before], _scores_baseline(before), 0.0).drift
    # ten equal drops are the most extreme of 2**10 sign patterns: p = 2**-10, not 0
    assert drift.regressed and drift.test.p_value == pytest.approx(2.0**-10)
    small = gate([_scored(k, 0.89) for k in before], _scores_baseline(before), 0.0).drift
    assert not small.regressed  # zero variance, but the drop is inside the tolerance


@pytest.mark.parametrize("size", [2, 3, 5, 6])
def test_equal_drops_on_a_few_artifacts_never_claim_more_than_2_to_the_minus_n(size):
    before = {f"k{i}": 0.9 for i in range(size)}
    drift = gate([_scored(k, 0.8) for k in before], _scores_baseline(before), 0.0).drift
    assert drift.test.p_value == pytest.approx(2.0**-size)
    assert not drift.regressed and not drift.test.can_reject and drift.underpowered
    assert drift.test.minimum_detectable is None and drift.smallest_flaggable is None
    assert "no drop can be shown" in drift.test.detail


def test_the_sign_flip_p_value_is_never_below_its_floor_even_by_monte_carlo():
    before = [0.9] * 40
    after = [0.8] * 40
    test = sign_flip_drop_test(before, after, 0.05)
    assert test.p_value is not None and test.p_value >= 2.0**-40
    assert test.beyond_noise


def test_welch_on_equal_scores_gives_the_permutation_floor_not_zero():
    few = welch_drop_test([0.9, 0.9], [0.8, 0.8], 0.01)
    assert few.p_value == pytest.approx(1 / 6) and not few.beyond_noise and not few.can_reject
    many = welch_drop_test([0.9] * 6, [0.8] * 6, 0.01)
    assert many.p_value == pytest.approx(1 / 924) and many.beyond_noise


def test_one_matched_artifact_is_too_few_to_test_drift():
    comparison = gate([_scored("a", 0.1)], _scores_baseline({"a": 0.9}), 0.0)
    assert comparison.drift.test.method == "none" and not comparison.drift.regressed
    assert any("not tested" in n and "too few" in n for n in comparison.notes)


def test_runs_sharing_no_artifact_use_welchs_test():
    before = {f"old{i}": 0.9 + 0.01 * (i % 3) for i in range(6)}
    after = [_scored(f"new{i}", 0.5 + 0.01 * (i % 3)) for i in range(6)]
    drift = gate(after, _scores_baseline(before), 0.0).drift
    assert drift.test.method == "welch" and drift.regressed
    expected = stats.ttest_ind(
        list(before.values()), [r.score for r in after], equal_var=False, alternative="greater"
    ).pvalue
    assert drift.test.p_value == pytest.approx(expected)


def test_welch_with_too_few_scores_does_not_test():
    assert welch_drop_test([0.9], [0.1]).method == "none"
    assert welch_drop_test([], [0.1]).drop is None


def _evidence(*answers: str, cells: int = 30):
    rule = DecisionRule()
    found = open_evidence(BY_ID["P2"], {answers[0]: 1.0}, rule, cells)
    for label in answers[1:]:
        found = add_answer(found, {label: 1.0}, rule, cells)
    return found


def test_a_flip_the_judge_repeats_beyond_noise_is_confirmed():
    evidence = {("a", "P2"): _evidence("no", "no", "no", "no", "no", "no")}
    assert evidence[("a", "P2")].status == "confirmed"
    comparison = gate([_result("a", P2="no")], _recorded([_result("a")]), 0.5, evidence=evidence)
    assert comparison.flips[0].status == "confirmed" and comparison.status == "regressed"
    assert comparison.flips[0].asks == 6


def test_a_flip_the_judge_does_not_repeat_is_only_a_note():
    evidence = {("a", "P2"): _evidence("no", *["yes"] * 6)}
    assert evidence[("a", "P2")].status == "refuted"
    settled = gate(
        [_settle(_result("a", P2="no"), evidence)],
        _recorded([_result("a")]),
        0.5,
        evidence=evidence,
    )
    assert settled.flips[0].status == "unconfirmed"
    assert settled.regressions == () and settled.status == "conforms"
    assert any("did not repeat" in n for n in settled.notes)


def test_a_failed_reask_is_unavailable_not_a_pass_or_a_regression():
    evidence = {("a", "P2"): failed_reask(_evidence("no"))}
    settled = gate(
        [_settle(_result("a", P2="no"), evidence)],
        _recorded([_result("a")]),
        0.5,
        evidence=evidence,
    )
    assert settled.flips[0].status == "unavailable"
    assert not settled.failed and settled.status == "unavailable"


def test_a_split_judge_leaves_the_flip_inconclusive_not_a_regression():
    answers = ["no"] + ["yes", "no"] * 4
    evidence = {("a", "P2"): _evidence(*answers)}
    assert evidence[("a", "P2")].status == "open"
    settled = gate(
        [_settle(_result("a", P2="no"), evidence)],
        _recorded([_result("a")]),
        0.5,
        evidence=evidence,
    )
    assert settled.flips[0].status == "inconclusive" and not settled.failed
    assert any("stayed split" in n for n in settled.notes)


def test_a_known_failure_is_reported_but_fails_only_under_strict():
    recorded = _recorded([dataclasses.replace(_result("a", G="yes"), canon=False)])
    now = [_result("a", G="yes")]
    comparison = gate(now, recorded, 0.5)
    assert comparison.known and comparison.known[0].key == "a"
    assert comparison.failures == () and comparison.status == "conforms"
    assert gate(now, recorded, 0.5, strict=True).status == "regressed"


def test_a_newly_non_canon_artifact_is_a_regression():
    comparison = gate([_result("a", G="yes")], _recorded([_result("a")]), 0.5)
    assert comparison.failures[0].key == "a" and not comparison.failures[0].known
    assert comparison.status == "regressed"


def test_a_low_score_with_unscored_questions_is_no_evidence_unless_the_bound_holds():
    result = _result("a", mission="partly")
    cells = list(result.cells)
    for i in range(1, 6):  # four facets and the gate go unanswered
        cells[i] = unscored_cell(cells[i].question, "timeout")
    partial = judge_verdict("a", cells, 0.85)
    assert partial.score is not None and partial.score < 0.85
    comparison = gate([partial], _recorded([_result("a")]), 0.85)
    assert comparison.failures == () and comparison.status == "unavailable"
    hopeless = [
        unscored_cell(c.question, "t") if c.id == "P1" else c
        for c in _result(
            "b",
            mission="partly",
            tradeoff="partly",
            scope="partly",
            consistency="partly",
            honesty="partly",
        ).cells
    ]
    low = judge_verdict("b", hopeless, 0.85)
    assert gate([low], _recorded([_result("b")]), 0.85).status == "regressed"


def test_rates_carry_wilson_intervals_baseline_and_now():
    results = [_result("a"), _result("b", G="yes", P2="no")]
    comparison = gate(results, _recorded([_result("a"), _result("b")]), 0.5)
    before, now = comparison.canon_rate
    assert (before.successes, before.trials) == (2, 2)
    assert (now.successes, now.trials) == (1, 2)
    assert now.interval == wilson_ci(1, 2)
    then_p2, now_p2 = comparison.question_rates["P2"]
    assert (then_p2.successes, now_p2.successes) == (2, 1)
    assert "1/2 = 50%" in str(now)


def test_provenance_notes_mention_a_changed_judge_and_constitution():
    baseline = _recorded([_result("a")])
    assert provenance_notes(baseline, judge="mock", constitution=CONSTITUTION.digest) == ()
    notes = provenance_notes(
        dataclasses.replace(baseline, judge="other"), judge="mock", constitution="x"
    )
    assert any("'other'" in n for n in notes)
    assert any("constitution changed" in n for n in notes)


def test_a_flip_from_a_single_ask_baseline_answer_is_not_a_regression():
    settled = gate([_result("a", P2="no")], _recorded([_result("a")], asks=1), 0.5)
    (flip,) = settled.flips
    assert flip.status == "unsettled" and not flip.regression
    assert any("rests on a single ask" in n for n in settled.notes)


def _with_text(result: ArtifactResult, text: str) -> ArtifactResult:
    return dataclasses.replace(result, digest=text_digest(text))


def test_an_identical_text_cannot_regress_on_the_judge_say_so_alone():
    baseline = _recorded([_with_text(_result("a"), "same reply")])
    now = _with_text(_result("a", P2="no", G="yes"), "same reply")
    comparison = gate([now], baseline, 0.5)
    assert [f.status for f in comparison.flips] == ["unchanged", "unchanged"]
    assert not comparison.failed and comparison.status == "conforms"
    (disagreement,) = comparison.judge_disagreements
    assert disagreement.key == "a" and disagreement.unchanged
    assert any("judge disagreement on an unchanged text" in n for n in comparison.notes)
    assert gate([now], baseline, 0.5, strict=True).failed  # --strict fails on every non-canon


def test_a_changed_text_still_regresses_and_an_unknown_text_counts_as_changed():
    baseline = _recorded([_with_text(_result("a"), "old reply")])
    changed = gate([_with_text(_result("a", P2="no"), "new reply")], baseline, 0.5)
    assert changed.failed and changed.flips[0].status == "pending"
    unknown = dataclasses.replace(
        baseline,
        artifacts={k: dataclasses.replace(r, digest=None) for k, r in baseline.artifacts.items()},
    )
    assert gate([_with_text(_result("a", P2="no"), "old reply")], unknown, 0.5).failed


def test_a_policy_stop_on_an_identical_text_still_fails():
    baseline = _recorded([_with_text(_result("a"), "same reply")])
    stop = GateOutcome("policy", "fail", ("refund above the limit",))
    stopped = _with_text(stopped_verdict("a", 0.5, (stop,)), "same reply")
    comparison = gate([stopped], baseline, 0.5)
    assert comparison.failed and comparison.failures[0].key == "a"


def test_identical_texts_are_left_out_of_the_mean_drift_test():
    records = [_with_text(_result(f"k{i}"), f"reply {i}") for i in range(12)]
    now = [_with_text(_result(f"k{i}", mission="no"), f"reply {i}") for i in range(12)]
    drift = gate(now, _recorded(records), 0.0).drift
    assert drift.test.method == "none" and not drift.regressed
    assert "identical" in drift.test.detail


def test_a_known_failure_is_still_compared_question_by_question():
    # non-canon in the baseline (a contradiction), and now P2 flips too: a regression
    # without --strict
    known = _with_text(_result("a", P1="no", G="yes"), "old reply")
    baseline = _recorded([known])
    assert baseline.artifacts["a"].canon is False
    still = gate([_with_text(_result("a", P1="no", G="yes"), "new reply")], baseline, 0.5)
    assert not still.failed and [n.key for n in still.known] == ["a"]
    again = [_with_text(_result("a", P1="no", G="yes"), "new reply")]
    assert gate(again, baseline, 0.5, strict=True).failed
    worse = gate([_with_text(_result("a", P1="no", G="yes", P2="no"), "new reply")], baseline, 0.5)
    assert worse.failed and [(f.question, f.status) for f in worse.regressions] == [
        ("P2", "pending")
    ]
    assert worse.failures == ()  # the artifact itself stays a known failure


def test_a_changed_constitution_lets_an_identical_text_regress():
    baseline = _recorded([_with_text(_result("a"), "same reply")])
    now = [_with_text(_result("a", P2="no"), "same reply")]
    assert not gate(now, baseline, 0.5, constitution=CONSTITUTION.digest).failed
    assert gate(now, baseline, 0.5, constitution="another-digest").failed
