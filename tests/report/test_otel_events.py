"""Results become gen_ai.evaluation.result events: plain values, checked without the SDK."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from canon.core.rubric import Question
from canon.core.scoring import refused_cell
from canon.gates.contracts.execution import Execution, Step
from canon.project.contract_files import read_trace
from canon.report.otel_events import (
    EVENT_NAME,
    REFUSED_LABEL,
    UNKNOWN_ERROR_TYPE,
    TraceLink,
    evaluation_events,
    modal_label,
    question_fingerprint,
    trace_link,
)

EXAMPLE_TRACE = (
    Path(__file__).resolve().parents[2] / "examples" / "traces" / "duplicate-charge.json"
)


def _by_artifact(events, key):
    return [e for e in events if e.attributes.get("canon.artifact.id") == key]


def _named(events, key, name):
    (event,) = [
        e for e in _by_artifact(events, key) if e.attributes["gen_ai.evaluation.name"] == name
    ]
    return event


def test_each_artifact_gets_a_verdict_event_then_one_per_question(mixed, plan):
    events = evaluation_events(mixed, plan, suite="chat")
    assert {e.name for e in events} == {EVENT_NAME}
    fine = _by_artifact(events, "fine")
    names = [e.attributes["gen_ai.evaluation.name"] for e in fine]
    questions = [f"canon.{q.id}" for q in plan.questions]
    assert names == ["canon.verdict", "canon.gate.policy", *questions]
    verdict = fine[0].attributes
    assert verdict["gen_ai.evaluation.score.label"] == "canon"
    assert verdict["gen_ai.evaluation.score.value"] == 1.0
    assert verdict["gen_ai.evaluation.explanation"] == "canon: score 1.000 meets the threshold 0.85"
    assert verdict["canon.suite"] == "chat"
    assert verdict["canon.judge.model"] == "mock:test"
    assert verdict["canon.rubric.id"] == plan.rubric.id
    assert verdict["canon.rubric.version"] == plan.rubric.version
    assert verdict["canon.rubric.fingerprint"] == plan.rubric.fingerprint
    assert verdict["canon.constitution.digest"] == plan.constitution.digest
    assert "error.type" not in verdict


def test_a_non_canon_verdict_carries_its_reasons_as_the_explanation(mixed, plan):
    events = evaluation_events(mixed, plan)
    gated = _named(events, "contradicts", "canon.verdict").attributes
    result = next(r for r in mixed if r.key == "contradicts")
    assert gated["gen_ai.evaluation.score.label"] == "non_canon"
    assert gated["canon.gated"] is True
    assert gated["gen_ai.evaluation.explanation"] == "; ".join(result.reasons)
    assert gated["gen_ai.evaluation.score.value"] == result.score


def test_an_unjudged_verdict_is_labelled_incomplete_not_non_canon(mixed, plan):
    events = evaluation_events(mixed, plan)
    down = _named(events, "judge-down", "canon.verdict").attributes
    assert down["gen_ai.evaluation.score.label"] == "incomplete"
    assert "error.type" in down


def test_a_question_event_has_the_answer_its_score_and_the_judges_reason(mixed, plan):
    events = evaluation_events(mixed, plan)
    result = next(r for r in mixed if r.key == "weak")
    cell = result.cell("mission")
    event = _named(events, "weak", "canon.mission").attributes
    assert event["gen_ai.evaluation.score.label"] == "no"
    assert event["gen_ai.evaluation.score.value"] == 0.0
    assert event["gen_ai.evaluation.explanation"] == cell.rationale
    assert event["canon.question.fingerprint"] == question_fingerprint(cell.question)
    assert event["canon.question.kind"] == "facet"
    principle = _named(events, "weak", "canon.P1").attributes
    assert principle["canon.question.subject"] == plan.questions[-4].subject


def test_an_na_answer_has_a_label_and_no_score(mixed, plan):
    event = _named(evaluation_events(mixed, plan), "fine", "canon.tradeoff").attributes
    assert event["gen_ai.evaluation.score.label"] == "n/a"
    assert "gen_ai.evaluation.score.value" not in event


def test_an_unscored_question_names_its_error_class_and_has_no_score(mixed, plan):
    events = evaluation_events(mixed, plan)
    event = _named(events, "judge-down", "canon.mission").attributes
    assert event["error.type"] == "JudgeUnavailableError"
    assert event["error.message"] == "rate limited after 3 retries <b>&</b>"
    assert "gen_ai.evaluation.score.value" not in event
    assert "gen_ai.evaluation.score.label" not in event
    verdict = _named(events, "judge-down", "canon.verdict").attributes
    assert verdict["error.type"] == "JudgeUnavailableError"


def test_an_unscored_cell_without_a_known_class_says_other(mixed, plan):
    result = next(r for r in mixed if r.key == "judge-down")
    cells = tuple(c._replace(error_type=None) for c in result.cells)
    bare = dataclasses.replace(result, cells=cells)
    events = evaluation_events([bare], plan)
    assert _named(events, "judge-down", "canon.mission").attributes["error.type"] == (
        UNKNOWN_ERROR_TYPE
    )


def test_a_refused_question_is_labelled_judge_refused_with_the_refusal_and_no_score(mixed, plan):
    result = next(r for r in mixed if r.key == "fine")
    refusal = "the judge refused to judge: I can't help with that."
    cells = tuple(refused_cell(c.question, refusal) if c.id == "P1" else c for c in result.cells)
    events = evaluation_events([dataclasses.replace(result, cells=cells)], plan)
    event = _named(events, "fine", "canon.P1").attributes
    assert event["gen_ai.evaluation.score.label"] == REFUSED_LABEL == "judge_refused"
    assert event["gen_ai.evaluation.explanation"] == refusal
    assert "gen_ai.evaluation.score.value" not in event and "error.type" not in event


def test_a_stopped_artifact_gets_its_gate_event_and_no_question_events(mixed, plan, hostile):
    events = _by_artifact(evaluation_events(mixed, plan), hostile)
    assert [e.attributes["gen_ai.evaluation.name"] for e in events] == [
        "canon.verdict",
        "canon.gate.policy",
    ]
    verdict, gate = (e.attributes for e in events)
    assert verdict["canon.stopped_by"] == "policy"
    assert "gen_ai.evaluation.score.value" not in verdict
    assert gate["gen_ai.evaluation.score.label"] == "fail"
    assert gate["gen_ai.evaluation.explanation"] == f"rule {hostile} failed; second reason"


def test_events_are_parented_to_the_linked_span_and_carry_its_response_id(mixed, plan):
    link = TraceLink("5b8efff798038103d269b633813fc60c", "a000000000000001", "resp-1")
    events = evaluation_events(mixed, plan, links={"fine": link})
    for event in _by_artifact(events, "fine"):
        assert (event.trace_id, event.span_id) == (link.trace_id, link.span_id)
        assert event.attributes["gen_ai.response.id"] == "resp-1"
    for event in _by_artifact(events, "weak"):
        assert event.trace_id is None and event.span_id is None
        assert "gen_ai.response.id" not in event.attributes


def test_the_link_of_the_example_trace_is_its_root_span():
    link = trace_link(read_trace(EXAMPLE_TRACE))
    assert link == TraceLink("5b8efff798038103d269b633813fc60c", "a000000000000001", None)


def _execution(trace_id: str, *steps: Step) -> Execution:
    return Execution(execution_id=trace_id, steps=steps)


def test_the_link_is_the_root_even_when_a_child_starts_first_and_carries_the_response_id():
    child = Step(
        "chat",
        "model_call",
        span_id="00000000000000bb",
        parent_id="00000000000000aa",
        start_ns=1,
        attributes={"gen_ai.response.id": "chatcmpl-9"},
    )
    root = Step("invoke_agent", "agent", span_id="00000000000000aa", start_ns=2)
    link = trace_link(_execution("0af7651916cd43dd8448eb211c80319c", child, root))
    assert link == TraceLink("0af7651916cd43dd8448eb211c80319c", "00000000000000aa", "chatcmpl-9")


def test_a_trace_without_w3c_ids_gives_no_link():
    root = Step("run", "agent", span_id="00000000000000aa")
    assert trace_link(_execution("unknown", root)) is None
    assert trace_link(_execution("0" * 32, root)) is None
    short = Step("run", "agent", span_id="abc")
    assert trace_link(_execution("0af7651916cd43dd8448eb211c80319c", short)) is None
    assert trace_link(_execution("0af7651916cd43dd8448eb211c80319c")) is None


def test_the_question_fingerprint_follows_what_is_asked(plan):
    question = plan.questions[0]
    assert question_fingerprint(question) == question_fingerprint(question)
    assert len(question_fingerprint(question)) == 16
    reworded: Question = dataclasses.replace(question, text=question.text + " Really?")
    assert question_fingerprint(reworded) != question_fingerprint(question)
    rescored = dataclasses.replace(
        question,
        choices=(dataclasses.replace(question.choices[0], score=0.5), *question.choices[1:]),
    )
    assert question_fingerprint(rescored) != question_fingerprint(question)


def test_the_modal_label_is_the_heaviest_choice_and_the_first_of_equals(mixed):
    cell = mixed[0].cells[0]
    assert modal_label(cell._replace(distribution=(("yes", 0.3), ("no", 0.7)))) == "no"
    assert modal_label(cell._replace(distribution=(("yes", 0.5), ("no", 0.5)))) == "yes"
    assert modal_label(cell._replace(distribution=())) is None


def test_a_check_marks_its_flips_and_known_failures_and_ends_with_a_check_event(regressed):
    plan, results, comparison = regressed
    events = evaluation_events(results, plan, comparison=comparison)
    confirmed = _named(events, "fine", "canon.P2").attributes
    assert confirmed["canon.check.flip"] == "confirmed"
    assert confirmed["canon.check.baseline_score"] == 1.0
    assert _named(events, "also-fine", "canon.P2").attributes["canon.check.flip"] == "unavailable"
    assert "canon.check.flip" not in _named(events, "fine", "canon.P1").attributes
    weak = _named(events, "weak", "canon.verdict").attributes
    assert weak["canon.check.known_failure"] is True
    assert "canon.check.known_failure" not in _named(events, "fine", "canon.verdict").attributes
    last = events[-1]
    assert last.trace_id is None and last.span_id is None
    check = last.attributes
    assert check["gen_ai.evaluation.name"] == "canon.check"
    assert check["gen_ai.evaluation.score.label"] == comparison.status == "regressed"
    assert check["canon.check.regressions"] == len(comparison.regressions) >= 1
    assert check["canon.check.missing"] == 1  # the recorded 'gone'
    assert check["gen_ai.evaluation.explanation"].startswith("regressed: ")
    assert "canon.artifact.id" not in check


def test_without_a_comparison_there_is_no_check_event(mixed, plan):
    names = {e.attributes["gen_ai.evaluation.name"] for e in evaluation_events(mixed, plan)}
    assert "canon.check" not in names
