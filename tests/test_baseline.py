from __future__ import annotations

import dataclasses
import json

import pytest

from canon.core.artifact import text_digest
from canon.core.baseline import (
    BASELINE_FORMAT,
    ArtifactRecord,
    Baseline,
    QuestionRecord,
    baseline_from_data,
    baseline_from_results,
    baseline_to_data,
    require_same_rubric,
)
from canon.core.constitution import Constitution, Principle
from canon.core.gate_outcome import GateOutcome
from canon.core.scoring import Answer, judge_verdict, score_cell, stopped_verdict
from canon.errors import BaselineError
from canon.project.store import dump_json, load_rubric

RUBRIC = load_rubric()
CONSTITUTION = Constitution("Serve customers well.", (Principle("Be honest."),))
QUESTIONS = RUBRIC.questions_for(CONSTITUTION)


def _result(key: str, reply: str = "yes"):
    cells = [score_cell(q, Answer({"no" if q.kind == "gate" else reply: 1.0})) for q in QUESTIONS]
    return judge_verdict(key, cells, 0.85)


def _baseline(results) -> Baseline:
    return baseline_from_results(
        results, rubric=RUBRIC, judge="mock", constitution=CONSTITUTION.digest, threshold=0.85
    )


def _stopped(key: str):
    outcome = GateOutcome(gate="policy", status="fail", reasons=("decision missing",))
    return stopped_verdict(key, 0.85, (outcome,))


def test_a_baseline_round_trips_through_plain_data():
    baseline = _baseline([_result("a"), _result("b", "partly"), _stopped("c")])
    again = baseline_from_data(json.loads(dump_json(baseline_to_data(baseline))), source="b.json")
    assert again == baseline
    assert again.format == BASELINE_FORMAT


def test_the_baseline_records_every_documented_field():
    data = baseline_to_data(_baseline([_result("a")]))
    assert set(data) == {"format", "rubric", "judge", "constitution", "threshold", "artifacts"}
    assert data["rubric"] == {
        "id": "cdt",
        "version": RUBRIC.version,
        "fingerprint": RUBRIC.fingerprint,
    }
    record = data["artifacts"]["a"]
    assert set(record) == {"score", "gated", "canon", "stopped_by", "questions"}
    assert record["questions"]["mission"] == {
        "score": 1.0,
        "confidence": 1.0,
        "state": "answered",
        "distribution": {"yes": 1.0},
        "asks": 1,
    }
    assert record["questions"]["P1"]["subject"] == "Be honest."


def test_the_gate_that_stopped_an_artifact_is_recorded():
    data = baseline_to_data(_baseline([_stopped("c")]))
    assert data["artifacts"]["c"]["stopped_by"] == "policy"
    assert data["artifacts"]["c"]["canon"] is False
    assert data["artifacts"]["c"]["score"] is None


def test_two_identical_runs_give_byte_identical_baselines():
    first = dump_json(baseline_to_data(_baseline([_result("a"), _result("b", "partly")])))
    second = dump_json(baseline_to_data(_baseline([_result("a"), _result("b", "partly")])))
    assert first == second
    assert first.endswith("}\n") and "timestamp" not in first


def test_the_artifact_order_does_not_change_the_file():
    one = dump_json(baseline_to_data(_baseline([_result("a"), _result("b", "partly")])))
    two = dump_json(baseline_to_data(_baseline([_result("b", "partly"), _result("a")])))
    assert one == two


def test_a_legacy_format_1_baseline_still_loads():
    legacy = {
        "format": 1,
        "rubric": {"id": "cdt", "version": "1.0.0"},
        "artifacts": {"a": {"score": 0.9, "gated": False}},
    }
    baseline = baseline_from_data(legacy, source="old.json")
    assert baseline.legacy
    assert baseline.artifacts["a"] == ArtifactRecord(score=0.9, gated=False)
    assert baseline.artifacts["a"].questions is None


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda d: d.update(format=9), "written by a newer Canon (baseline format 9)"),
        (lambda d: d.update(format=0), "unknown baseline format 0"),
        (lambda d: d.update(format=True), "unknown baseline format True"),
        (lambda d: d.pop("judge"), "missing key(s) 'judge'"),
        (lambda d: d.update(extra=1), "unknown key(s) 'extra'"),
        (lambda d: d.update(answered_by=[]), "'answered_by' must be a non-empty list"),
        (lambda d: d.update(answered_by="jev"), "'answered_by' must be a non-empty list"),
        (lambda d: d.update(format=5, answered_by=["jev"]), "unknown key(s) 'answered_by'"),
        (lambda d: d.update(logprobs="yes"), "'logprobs' must be true or false"),
        (lambda d: d.update(logprobs=None), "'logprobs' must be true or false"),
        (lambda d: d.update(format=6, logprobs=True), "unknown key(s) 'logprobs'"),
        (lambda d: d.update(samples=0), "'samples' must be a whole number >= 1"),
        (lambda d: d.update(samples="3"), "'samples' must be a whole number >= 1"),
        (lambda d: d.update(samples=True), "'samples' must be a whole number >= 1"),
        (lambda d: d.update(samples=2.0), "'samples' must be a whole number >= 1"),
        (lambda d: d.update(format=7, samples=3), "unknown key(s) 'samples'"),
        (lambda d: d.update(artifacts=[]), "'artifacts' must be an object"),
        (lambda d: d["artifacts"]["a"].update(score="high"), "score must be a number in [0, 1]"),
        (lambda d: d["artifacts"]["a"].update(score=1.5), "score must be a number in [0, 1]"),
        (lambda d: d["artifacts"]["a"].update(gated="no"), "gated must be true or false"),
        (lambda d: d["artifacts"]["a"].update(stopped_by="judge"), "stopped_by must be"),
        (lambda d: d["artifacts"]["a"].pop("questions"), "missing key(s) 'questions'"),
        (
            lambda d: d["artifacts"]["a"]["questions"]["G"].update(state="maybe"),
            "state must be one of",
        ),
        (
            lambda d: d["artifacts"]["a"]["questions"]["G"].update(state=["answered"]),
            "state must be one of",
        ),
        (lambda d: d["artifacts"]["a"].update(stopped_by={"gate": 1}), "stopped_by must be"),
        (lambda d: d["rubric"].pop("fingerprint"), "rubric.fingerprint must be non-empty text"),
        (lambda d: d.update(threshold=None), "'threshold' must be a number"),
    ],
)
def test_a_malformed_baseline_is_a_baseline_error_naming_file_and_problem(mutate, fragment):
    data = json.loads(dump_json(baseline_to_data(_baseline([_result("a")]))))
    mutate(data)
    with pytest.raises(BaselineError) as caught:
        baseline_from_data(data, source="baselines/suite.json")
    message = str(caught.value)
    assert message.startswith("baselines/suite.json")
    assert fragment in message


def test_a_baseline_that_is_not_an_object_is_refused():
    with pytest.raises(BaselineError, match="a baseline is a JSON object, got a list"):
        baseline_from_data([], source="x.json")


def test_a_baseline_under_another_rubric_version_is_refused_with_reaccept():
    baseline = dataclasses.replace(_baseline([_result("a")]), rubric_version="0.9.0")
    with pytest.raises(BaselineError) as caught:
        require_same_rubric(baseline, RUBRIC, source="baselines/suite.json")
    message = str(caught.value)
    assert "rubric changed" in message
    assert "cdt 0.9.0" in message and f"cdt {RUBRIC.version}" in message
    assert '"canon accept"' in message


def test_a_baseline_under_an_edited_rubric_of_the_same_version_is_refused():
    baseline = dataclasses.replace(_baseline([_result("a")]), rubric_fingerprint="0" * 16)
    with pytest.raises(BaselineError, match="fingerprint 0000000000000000"):
        require_same_rubric(baseline, RUBRIC, source="b.json")


def test_the_same_rubric_is_accepted():
    require_same_rubric(_baseline([_result("a")]), RUBRIC, source="b.json")


def test_question_records_keep_subjects_only_for_principles():
    record = _baseline([_result("a")]).artifacts["a"]
    assert record.questions is not None
    assert record.questions["P1"] == QuestionRecord(
        1.0, 1.0, "answered", "Be honest.", (("yes", 1.0),), 1
    )
    assert record.questions["honesty"].subject is None


def test_a_format_2_baseline_still_loads_without_distributions():
    data = baseline_to_data(_baseline([_result("a")]))
    data["format"] = 2
    for record in data["artifacts"].values():
        for question in record["questions"].values():
            del question["distribution"], question["asks"]
    baseline = baseline_from_data(data, source="old.json")
    assert baseline.format == 2 and not baseline.legacy
    assert baseline.artifacts["a"].questions["mission"].distribution is None  # type: ignore[index]


def test_format_2_refuses_the_format_3_fields():
    data = baseline_to_data(_baseline([_result("a")]))
    data["format"] = 2
    with pytest.raises(BaselineError, match="unknown key"):
        baseline_from_data(data, source="old.json")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("asks", -1, "asks must be a whole number"),
        ("asks", True, "asks must be a whole number"),
        ("distribution", {}, "distribution must be an object"),
        ("distribution", {"yes": 2}, "must be a number in [0, 1]"),
    ],
)
def test_bad_format_3_fields_are_refused_naming_the_file(field, value, message):
    data = baseline_to_data(_baseline([_result("a")]))
    data["artifacts"]["a"]["questions"]["mission"][field] = value
    with pytest.raises(BaselineError) as caught:
        baseline_from_data(data, source="b.json")
    assert "b.json" in str(caught.value) and message in str(caught.value)


def test_the_asks_a_cell_pooled_are_recorded():
    baseline = baseline_from_results(
        [_result("a")],
        rubric=RUBRIC,
        judge="mock",
        constitution="x",
        threshold=0.85,
        asks={("a", "G"): 6},
    )
    assert baseline.artifacts["a"].questions["G"].asks == 6  # type: ignore[index]
    assert baseline.artifacts["a"].questions["mission"].asks == 1  # type: ignore[index]


def _with_digest(key: str):
    return dataclasses.replace(_result(key), digest=text_digest(f"the text of {key}"))


def test_format_5_records_each_artifact_text_digest():
    data = baseline_to_data(_baseline([_with_digest("a")]))
    assert data["format"] == BASELINE_FORMAT and data["artifacts"]["a"]["digest"] == text_digest(
        "the text of a"
    )
    assert baseline_from_data(data, source="b.json").artifacts["a"].digest == text_digest(
        "the text of a"
    )


def test_a_baseline_says_whether_its_model_judge_read_probabilities_and_reads_it_back():
    for logprobs in (True, False):
        baseline = dataclasses.replace(_baseline([_result("a")]), logprobs=logprobs)
        data = json.loads(dump_json(baseline_to_data(baseline)))
        assert data["logprobs"] is logprobs
        assert baseline_from_data(data, source="b.json").logprobs is logprobs
    data = baseline_to_data(_baseline([_result("a")]))  # a judge with no such setting
    assert "logprobs" not in data and baseline_from_data(data, source="b.json").logprobs is None


def test_a_baseline_says_how_many_answers_an_ask_its_model_judge_took_and_reads_it_back():
    for samples in (1, 3):
        baseline = dataclasses.replace(_baseline([_result("a")]), samples=samples)
        data = json.loads(dump_json(baseline_to_data(baseline)))
        assert data["samples"] == samples
        assert baseline_from_data(data, source="b.json").samples == samples
    data = baseline_to_data(_baseline([_result("a")]))  # a judge with no such setting
    assert "samples" not in data and baseline_from_data(data, source="b.json").samples is None
    data["format"] = 7  # older than format 8: it does not say
    assert baseline_from_data(data, source="b.json").samples is None


def test_a_format_3_baseline_loads_with_its_texts_unknown_and_refuses_a_digest():
    data = baseline_to_data(_baseline([_result("a")]))
    data["format"] = 3
    baseline = baseline_from_data(data, source="old.json")
    assert baseline.format == 3 and baseline.artifacts["a"].digest is None
    with_digest = baseline_to_data(_baseline([_with_digest("a")]))
    with_digest["format"] = 3
    with pytest.raises(BaselineError, match=r"old.json: artifact 'a': unknown key\(s\) 'digest'"):
        baseline_from_data(with_digest, source="old.json")


@pytest.mark.parametrize("value", ["", 7, None, ["x"]])
def test_a_bad_digest_is_refused_naming_the_file(value):
    data = baseline_to_data(_baseline([_with_digest("a")]))
    data["artifacts"]["a"]["digest"] = value
    if value is None:
        assert baseline_from_data(data, source="b.json").artifacts["a"].digest is None
        return
    with pytest.raises(BaselineError, match=r"b.json: artifact 'a': digest must be non-empty text"):
        baseline_from_data(data, source="b.json")
