from __future__ import annotations

import dataclasses
import math

import pytest
from scipy import stats

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
    confirm_flips,
    gate,
    provenance_notes,
)
from canon.core.constitution import Constitution, Principle
from canon.core.scoring import (
    Answer,
    ArtifactResult,
    judge_verdict,
    score_cell,
    stopped_verdict,
    unscored_cell,
)
from canon.core.significance import ALPHA, paired_drop_test, welch_drop_test
from canon.gates.outcome import GateOutcome
from canon.store import load_rubric

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


def _recorded(results: list[ArtifactResult]) -> Baseline:
    return baseline_from_results(
        results, rubric=RUBRIC, judge="mock", constitution=CONSTITUTION.digest, threshold=0.5
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
        {k: ArtifactRecord(score=1.0, gated=False) for k in "abc"},
    )
    results = [_result(k, P2="no", P1="no") for k in "abc"]
    comparison = gate(results, legacy, 0.5)
    assert comparison.flips == ()
    assert any("format 1" in n and "canon accept" in n for n in comparison.notes)
    assert comparison.drift.regressed  # the mean fell from 1.0 to 0.75 on every artifact


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
    diffs = [0.5, -0.4, 0.3, -0.3, 0.15, -0.1]
    before = {f"k{i}": 0.5 for i in range(len(diffs))}
    after = [_scored(f"k{i}", 0.5 - d) for i, d in enumerate(diffs)]
    drift = gate(after, _scores_baseline(before), 0.0).drift
    assert drift.drop is not None and drift.drop > drift.tolerance
    assert drift.test.p_value is not None and drift.test.p_value > ALPHA
    assert not drift.regressed
    assert drift.test.minimum_detectable is not None and drift.test.minimum_detectable > drift.drop


def test_a_large_consistent_drop_is_a_regression_and_states_the_detectable_drop():
    before = {f"k{i}": 0.9 for i in range(8)}
    after = [_scored(f"k{i}", 0.8 + 0.005 * (i % 2)) for i in range(8)]
    comparison = gate(after, _scores_baseline(before), 0.0)
    drift = comparison.drift
    assert drift.regressed and comparison.status == "regressed"
    assert drift.test.method == "paired" and drift.test.p_value < ALPHA
    diffs = [0.9 - r.score for r in after]  # type: ignore[operator]
    sd = stats.tstd(diffs)
    expected = stats.t.ppf(1 - ALPHA, 7) * sd / math.sqrt(8)
    assert drift.test.minimum_detectable == pytest.approx(expected)
    assert drift.smallest_flaggable == pytest.approx(max(0.02, expected))


def test_the_paired_p_value_is_scipys_one_sided_ttest_rel():
    before, after = [0.9, 0.8, 0.95, 0.7], [0.85, 0.7, 0.9, 0.72]
    test = paired_drop_test(before, after)
    expected = stats.ttest_rel(before, after, alternative="greater").pvalue
    assert test.p_value == pytest.approx(expected)


def test_a_constant_drop_with_zero_variance_is_not_noise():
    before = {f"k{i}": 0.9 for i in range(5)}
    drift = gate([_scored(k, 0.85) for k in before], _scores_baseline(before), 0.0).drift
    assert drift.regressed and drift.test.minimum_detectable == 0.0
    small = gate([_scored(k, 0.89) for k in before], _scores_baseline(before), 0.0).drift
    assert not small.regressed  # zero variance, but the drop is inside the tolerance


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


def test_a_reasked_flip_that_still_violates_is_confirmed():
    comparison = gate([_result("a", P2="no")], _recorded([_result("a")]), 0.5)
    again = score_cell(BY_ID["P2"], Answer({"no": 1.0}))
    confirmed = confirm_flips(comparison, {("a", "P2"): again})
    assert confirmed.flips[0].status == "confirmed" and confirmed.status == "regressed"


def test_a_reasked_flip_that_recovers_is_only_a_note():
    comparison = gate([_result("a", P2="no")], _recorded([_result("a")]), 0.5)
    again = score_cell(BY_ID["P2"], Answer({"yes": 1.0}))
    settled = confirm_flips(comparison, {("a", "P2"): again})
    assert settled.flips[0].status == "unconfirmed"
    assert settled.regressions == ()
    assert any("did not repeat" in n for n in settled.notes)


def test_a_failed_reask_is_unavailable_not_a_pass_or_a_regression():
    comparison = gate([_result("a", P2="no")], _recorded([_result("a")]), 0.5)
    settled = confirm_flips(comparison, {("a", "P2"): unscored_cell(BY_ID["P2"], "timeout")})
    assert settled.flips[0].status == "unavailable"
    assert not settled.failed and settled.status == "unavailable"


def test_provenance_notes_mention_a_changed_judge_and_constitution():
    baseline = _recorded([_result("a")])
    assert provenance_notes(baseline, judge="mock", constitution=CONSTITUTION.digest) == ()
    notes = provenance_notes(
        dataclasses.replace(baseline, judge="other"), judge="mock", constitution="x"
    )
    assert any("'other'" in n for n in notes)
    assert any("constitution changed" in n for n in notes)
