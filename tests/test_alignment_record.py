"""The alignment file's records, and what a failed check says about the judge's alignment."""

from __future__ import annotations

import json

import pytest

from canon.core.agreement import LabelPair, agreement
from canon.core.alignment import (
    AlignmentRecord,
    Failing,
    Provenance,
    agreement_to_data,
    alignment_from_data,
    alignment_statuses,
    alignment_to_data,
    below_required,
    merge_record,
)
from canon.core.rubric import Choice, Question
from canon.errors import BaselineError
from canon.project.alignment_store import alignment_path, read_alignment, write_alignment

GRADED = (Choice("yes", 1.0), Choice("partly", 0.5), Choice("no", 0.0), Choice("n/a", None))
P2 = Question("P2", "principle", "Uphold it?", GRADED, "Escalate.", "escalate")
HERE = Provenance("openai/judge-a", "fp1", "const1")


def _record(provenance: Provenance = HERE, kappa_pairs=None) -> AlignmentRecord:
    pairs = kappa_pairs or [
        LabelPair("a", "no", "no"),
        LabelPair("b", "yes", "yes"),
        LabelPair("c", "yes", "yes"),
        LabelPair("d", "no", "yes"),
    ]
    return AlignmentRecord(
        provenance, "1.0.0", "labels.jsonl", {"P2": agreement_to_data(agreement(P2, pairs))}
    )


def test_records_round_trip_through_plain_data_sorted_by_provenance():
    other = Provenance("mock:x.yaml", "fp1", "const1")
    data = alignment_to_data([_record(), _record(other)])
    assert [r["judge"] for r in data["records"]] == ["mock:x.yaml", "openai/judge-a"]
    again = alignment_from_data(json.loads(json.dumps(data)), source="a.json")
    assert alignment_to_data(again) == data


def test_merging_replaces_the_record_of_the_same_provenance_and_keeps_others():
    other = Provenance("openai/judge-b", "fp1", "const1")
    first = merge_record((), _record())
    both = merge_record(first, _record(other))
    perfect = [LabelPair("a", "no", "no"), LabelPair("b", "yes", "yes")]
    replaced = merge_record(both, _record(kappa_pairs=perfect))
    assert len(replaced) == 2
    mine = next(r for r in replaced if r.provenance == HERE)
    assert mine.questions["P2"]["kappa"] == 1.0


def _one_record(questions: dict) -> dict:
    """An alignment file of one record holding ``questions``."""
    record = {
        "judge": "x",
        "rubric": {"fingerprint": "f", "version": "1"},
        "constitution": "c",
        "labels": "l",
        "questions": questions,
    }
    return {"format": 1, "records": [record]}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "an alignment file has exactly 'format' and 'records'"),
        ({"format": 2, "records": []}, "unknown alignment format 2"),
        ({"format": 1, "records": {}}, "'records' must be a list"),
        ({"format": 1, "records": [{"judge": "x"}]}, "record 1: expected exactly"),
        (
            _one_record({"P2": {"n": "four"}}),
            "record 1: question 'P2': 'n' must be a whole number",
        ),
        (
            _one_record({"P2": {"n": 4, "kappa": 0.5, "kappa_interval": [0.1]}}),
            "'kappa_interval' must be [low, high] or null",
        ),
        (
            _one_record({"P2": {"n": 4, "calibration": [0.1]}}),
            "question 'P2': 'calibration' must be a mapping",
        ),
        (
            _one_record({"P2": {"n": 4, "calibration": {"brier": "low"}}}),
            "calibration 'brier' must be a number or null",
        ),
    ],
)
def test_a_malformed_alignment_file_is_refused_naming_it(data, message):
    with pytest.raises(BaselineError) as caught:
        alignment_from_data(data, source="baselines/suite.alignment.json")
    assert "baselines/suite.alignment.json" in str(caught.value) and message in str(caught.value)


def test_the_store_lives_next_to_the_baseline_and_writes_deterministically(tmp_path):
    baseline = tmp_path / "baselines" / "suite.json"
    path = alignment_path(baseline)
    assert path.name == "suite.alignment.json"
    assert read_alignment(path) == ()
    write_alignment(path, _record())
    first = path.read_bytes()
    write_alignment(path, _record())
    assert path.read_bytes() == first and first.endswith(b"\n")
    assert read_alignment(path)[0].provenance == HERE


def test_an_unreadable_alignment_file_is_a_baseline_error(tmp_path):
    path = tmp_path / "suite.alignment.json"
    path.write_text("{not json")
    with pytest.raises(BaselineError, match="alignment file is not valid JSON"):
        read_alignment(path)


def test_a_failing_principle_shows_its_recorded_kappa_with_interval_and_n():
    (status,) = alignment_statuses([Failing("P2", "escalate")], [_record()], HERE)
    assert status.kappa == pytest.approx(0.5)
    assert status.line.startswith("judge agrees with human labels on P2 [escalate]: kappa 0.50 [")
    assert status.line.endswith("], n = 4")


def test_a_failing_principle_without_labels_is_not_validated():
    (status,) = alignment_statuses([Failing("P3")], [_record()], HERE)
    assert status.kappa is None
    assert status.line.startswith("judge not validated on this principle: P3 (no human labels")


def test_a_record_under_another_judge_does_not_validate_this_one():
    elsewhere = Provenance("openai/judge-b", "fp1", "const1")
    (status,) = alignment_statuses([Failing("P2", "escalate")], [_record(elsewhere)], HERE)
    assert status.kappa is None and "only under another judge" in status.line
    changed = Provenance("openai/judge-a", "fp1", "const2")  # the constitution changed
    (status,) = alignment_statuses([Failing("P2", "escalate")], [_record()], changed)
    assert status.kappa is None


def test_no_record_at_all_says_to_run_align_and_names_a_gate_a_question():
    (status,) = alignment_statuses([Failing("G", None, "gate")], [], HERE)
    assert status.line.startswith("judge not validated on this question: G (")
    assert 'run "canon align --labels FILE"' in status.line


def test_require_alignment_fails_below_k_and_when_unmeasured_and_passes_at_or_above():
    statuses = alignment_statuses([Failing("P2", "escalate")], [_record()], HERE)
    below = below_required(statuses, 0.6)
    assert (
        below is not None and "only at kappa 0.50 (n = 4), below --require-alignment 0.6" in below
    )
    assert below_required(statuses, 0.5) is None
    unmeasured = alignment_statuses([Failing("P3")], [_record()], HERE)
    refusal = below_required(unmeasured, 0.2)
    assert refusal is not None and "unmeasured" in refusal and "P3" in refusal
