"""The decision rule: sequential e-value confirmation, settled verdicts, calibration."""

from __future__ import annotations

import asyncio
import json
import random
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from canon import CoherenceMetric
from canon.check.calibrate import calibrate
from canon.check.confirm import confirm
from canon.check.runner import ScoringPlan, score_artifacts
from canon.cli import main
from canon.core.artifact import Artifact
from canon.core.constitution import Constitution, Principle
from canon.core.evidence import DecisionRule, add_answer, claim_for, factor, open_evidence
from canon.core.rubric import Question
from canon.core.stats import wilson_ci
from canon.errors import ConfigError, UsageError
from canon.judge.mock import MockJudge
from canon.project.store import load_rubric

RUBRIC = load_rubric()
CONSTITUTION = Constitution("Serve customers.", (Principle("Be honest."), Principle("Be kind.")))
QUESTIONS = {q.id: q for q in RUBRIC.questions_for(CONSTITUTION)}
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_one_agreeing_answer_multiplies_the_evidence_by_the_odds_of_the_flip_rate():
    rule = DecisionRule(flip_rate=0.2)
    assert factor(1.0, rule) == pytest.approx(4.0)
    assert factor(0.0, rule) == pytest.approx(0.25)
    assert factor(0.2, rule) == pytest.approx(1.0)  # a judge at the flip rate: no evidence


def test_the_bar_grows_with_the_cells_sharing_the_budget():
    rule = DecisionRule()
    assert rule.bar(330) == pytest.approx(330 / 0.04)
    assert rule.reasks_to_confirm(10) < rule.reasks_to_confirm(1000)
    assert rule.cell_alpha + rule.drift_alpha == pytest.approx(rule.alpha)


def test_a_claim_holds_the_labels_scoring_no_better_than_the_first_answer():
    mission, gate = QUESTIONS["mission"], QUESTIONS["G"]
    assert claim_for(mission, [("no", 1.0)]) == {"no"}
    assert claim_for(mission, [("partly", 1.0)]) == {"partly", "no"}
    assert claim_for(mission, [("n/a", 1.0)]) == {"n/a"}
    assert claim_for(gate, [("yes", 1.0)]) == {"yes"}  # the contradiction, score 0


def _walk(question: Question, answers: list[str], cells: int = 30):
    rule = DecisionRule()
    found = open_evidence(question, {answers[0]: 1.0}, rule, cells)
    for label in answers[1:]:
        if found.status != "open":
            break
        found = add_answer(found, {label: 1.0}, rule, cells)
    return found


def test_a_repeated_low_answer_is_confirmed_and_a_lone_one_refuted():
    rule = DecisionRule()
    needed = rule.reasks_to_confirm(30)
    assert _walk(QUESTIONS["P1"], ["no"] * (needed + 1)).status == "confirmed"
    assert _walk(QUESTIONS["P1"], ["no"] * needed).status == "open"
    # Two disagreeing re-asks no longer clear a claim: a judge split half and half on the
    # cell gives them a quarter of the time. Six in a row do (issue 23: a coin-flip judge
    # must not read as "did not repeat it").
    assert _walk(QUESTIONS["P1"], ["no", "yes", "yes"]).status == "open"
    assert _walk(QUESTIONS["P1"], ["no"] + ["yes"] * 5).status == "open"
    refuted = _walk(QUESTIONS["P1"], ["no"] + ["yes"] * 6)
    assert refuted.status == "refuted" and refuted.disagreed == 6


def test_under_the_null_a_cell_is_confirmed_less_often_than_its_alpha():
    # A judge that strays to the claimed label exactly at the assumed flip rate: the worst
    # case the rule allows. Seeded, and the margin leaves room: 20,000 walks.
    rule = DecisionRule()  # one cell: a bar of 25, two agreeing answers confirm
    rng = random.Random(7)
    question = QUESTIONS["G"]
    confirmed = 0
    walks = 20_000
    for _ in range(walks):
        found = open_evidence(question, {"yes": 1.0}, rule, 1)
        while found.status == "open" and found.reasks < rule.max_reasks:
            label = "yes" if rng.random() < rule.flip_rate else "no"
            found = add_answer(found, {label: 1.0}, rule, 1)
        confirmed += found.status == "confirmed"
    # Every walk starts from a low first answer, which under the null appears only with
    # probability flip_rate: the cell's error is flip_rate times this share.
    share = confirmed / walks
    assert wilson_ci(confirmed, walks)[1] * rule.flip_rate < rule.cell_alpha
    assert 0 < share < 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"alpha": 0.0}, "alpha must be in (0, 0.5)"),
        ({"flip_rate": 0.5}, "flip_rate must be in (0, 0.5)"),
        ({"flip_rate": "x"}, "flip_rate must be a number"),
        ({"max_reasks": 0}, "max_reasks must be between 1 and 64"),
        ({"max_reasks": 2.5}, "max_reasks must be a whole number"),
    ],
)
def test_a_bad_rule_is_refused_with_the_reason(options, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        DecisionRule(**options)


def _plan(script) -> ScoringPlan:
    return ScoringPlan(CONSTITUTION, RUBRIC, MockJudge(script), 0.85)


def _noisy_gate():
    asked = {"G": 0}

    def script(question: Question, text: str) -> str:
        if question.id == "G":
            asked["G"] += 1
            return "yes" if asked["G"] == 1 else "no"  # one noisy contradiction
        return "yes"

    return script, asked


def test_one_noisy_gate_answer_is_cleared_by_re_asking_and_noted():
    script, asked = _noisy_gate()
    plan = _plan(script)
    artifact = Artifact("Refunded.", id="a")
    first = asyncio.run(score_artifacts(plan, [artifact]))
    assert first[0].gated
    settled = asyncio.run(confirm(plan, [artifact], first, DecisionRule()))
    (result,) = settled.results
    assert result.canon and not result.gated
    assert any("not beyond judge noise" in n for n in result.notes)
    # refuted once six re-asks in a row disagree: two could be a coin-flip judge's
    assert asked["G"] == 7 and settled.reasks == 6


def test_a_real_contradiction_is_confirmed_and_stays_non_canon():
    plan = _plan(lambda q, t: "yes")  # the gate says "contradiction" every time
    artifact = Artifact("Refunded.", id="a")
    first = asyncio.run(score_artifacts(plan, [artifact]))
    settled = asyncio.run(confirm(plan, [artifact], first, DecisionRule()))
    (result,) = settled.results
    assert result.gated and not result.canon
    cells = len(first[0].cells)
    assert settled.reasks == DecisionRule().reasks_to_confirm(cells)


def test_a_score_held_down_by_one_noisy_answer_is_not_below_the_threshold():
    asked = {"n": 0}

    def script(question: Question, text: str) -> str:
        if question.id == "G":
            return "no"
        if question.id in ("mission", "scope"):
            asked["n"] += 1
            return "no" if asked["n"] <= 2 else "yes"  # two noisy answers, once each
        return "yes"

    plan = _plan(script)
    artifact = Artifact("Refunded.", id="a")
    first = asyncio.run(score_artifacts(plan, [artifact]))
    assert first[0].score is not None and first[0].score < 0.85
    (result,) = asyncio.run(confirm(plan, [artifact], first, DecisionRule())).results
    assert result.canon and result.below_threshold is False


def test_a_truly_low_score_is_confirmed_below_the_threshold():
    plan = _plan(lambda q, t: "no" if q.id == "G" else ("partly" if q.kind == "facet" else "yes"))
    artifact = Artifact("Refunded.", id="a")
    first = asyncio.run(score_artifacts(plan, [artifact]))
    (result,) = asyncio.run(confirm(plan, [artifact], first, DecisionRule())).results
    assert not result.canon and result.below_threshold is True
    assert "confirmed" in result.reasons[0]


def test_assert_coheres_survives_one_noisy_answer():
    script, _ = _noisy_gate()
    metric = CoherenceMetric(constitution=CONSTITUTION, judge=MockJudge(script))
    assert metric.assert_coheres("Refunded.").canon


def test_calibration_measures_a_noisy_judge_within_its_interval():
    rng = random.Random(3)

    def noisy(question: Question, text: str) -> str:
        true = "no" if question.id == "G" else "yes"
        if rng.random() < 0.2:
            return rng.choice([c.label for c in question.choices if c.label != true])
        return true

    plan = _plan(noisy)
    artifacts = [Artifact(f"Reply {i}.", id=f"a{i}") for i in range(40)]
    found = asyncio.run(calibrate(plan, artifacts, cells=300, repeats=6, seed=1))
    facet = found.by_kind["facet"]
    low, high = facet.interval
    # The majority-based rate reads a little under the true 0.2 with six answers a cell.
    assert 0.1 < (facet.rate or 0.0) < 0.3 and low < 0.25 and high > 0.15
    assert found.recommended_flip_rate >= 0.2


def test_calibrate_refuses_too_few_repeats():
    with pytest.raises(UsageError, match="at least 2 repeats"):
        asyncio.run(calibrate(_plan(lambda q, t: "yes"), [Artifact("x")], repeats=1))


def test_canon_calibrate_prints_rates_and_a_recommendation(tmp_path, monkeypatch):
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES, project)
    monkeypatch.chdir(project)
    result = CliRunner().invoke(main, ["calibrate", "--cells", "12", "--repeats", "3"])
    assert result.exit_code == 0, result.output
    assert "recommended flip_rate" in result.stdout and "Wilson" in result.stdout
    as_json = CliRunner().invoke(main, ["calibrate", "--format", "json", "--cells", "5"])
    document = json.loads(as_json.stdout)
    assert document["cells"] == 5 and document["by_kind"]
    assert all(
        0 <= v["wilson_95"][0] <= v["wilson_95"][1] <= 1 for v in document["by_kind"].values()
    )


def test_a_bad_flip_rate_in_canon_yaml_is_a_config_error_naming_the_file(tmp_path):
    from canon.project.config import load_config

    config = tmp_path / "canon.yaml"
    config.write_text("flip_rate: 0.9\n")
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert "canon.yaml" in str(caught.value) and "flip_rate" in str(caught.value)


def test_check_strict_fails_on_a_known_failure(tmp_path, monkeypatch):
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES, project)
    monkeypatch.chdir(project)
    script = project / "judge-script.yaml"
    script.write_text(script.read_text().replace('any part: "no"', 'any part: "yes"'))
    runner = CliRunner()
    accepted = runner.invoke(main, ["accept", "--quiet"])
    assert accepted.exit_code == 0 and "known failures" in accepted.stdout
    checked = runner.invoke(main, ["check", "--quiet"])
    assert checked.exit_code == 0, checked.output
    assert "known failures" in checked.stdout
    strict = runner.invoke(main, ["check", "--quiet", "--strict"])
    assert strict.exit_code == 1


ONE_PRINCIPLE = Constitution("Serve customers.", (Principle("Never ask for a card number."),))


def _one_principle_run(script: object) -> tuple[object, MockJudge]:
    if isinstance(script, dict):
        replies = script
        script = lambda question, _text: replies.get(question.id, replies["__default__"])  # noqa: E731
    judge = MockJudge(script)  # type: ignore[arg-type]
    plan = ScoringPlan(ONE_PRINCIPLE, RUBRIC, judge, 0.85)
    artifacts = [Artifact("Please send me your card number.", id="a")]
    first = asyncio.run(score_artifacts(plan, artifacts))
    return asyncio.run(confirm(plan, artifacts, first, DecisionRule())).results[0], judge


def test_a_confirmed_worst_answer_on_a_principle_fails_an_artifact_whose_mean_passes():
    result, _ = _one_principle_run({"G": "no", "P1": "no", "__default__": "yes"})
    assert result.raw_score == pytest.approx(6 / 7)  # above the 0.85 threshold on its mean
    assert not result.canon and result.violated == ("P1",)
    assert any(r.startswith("principle P1 plainly violated") for r in result.reasons)


def test_a_partly_on_a_principle_stays_a_score():
    result, _ = _one_principle_run({"G": "no", "P1": "partly", "__default__": "yes"})
    assert result.canon and result.violated == ()
    assert result.score == pytest.approx(6.5 / 7)


def test_a_lone_worst_answer_the_judge_does_not_repeat_is_only_a_note():
    asked: list[int] = []

    def script(question: Question, _text: str) -> str:
        if question.id != "P1":
            return "no" if question.id == "G" else "yes"
        asked.append(1)
        return "no" if len(asked) == 1 else "yes"  # the first answer was the judge's noise

    result, _ = _one_principle_run(script)
    assert result.canon and result.violated == ()
    assert any("plainly violated, but not beyond judge noise" in n for n in result.notes)
    assert len(asked) >= 3  # re-asked until refuted


def test_a_passing_gate_answer_with_material_contradiction_mass_is_re_asked_in_a_check():
    from canon.check.pipeline import baseline_from_run, check_run, score_run

    asked: list[str] = []

    def script(question: Question, text: str) -> object:
        if question.id != "G":
            return "yes"
        if text == "Old reply.":
            return "no"
        asked.append(text)
        # both first looks pass (30 % on "contradiction", below the gate's 50 %); the
        # re-asks that minority mass earns contradict
        return {"no": 0.7, "yes": 0.3} if len(asked) <= 2 else "yes"

    plan = ScoringPlan(ONE_PRINCIPLE, RUBRIC, MockJudge(script), 0.85)
    accepted = asyncio.run(score_run(plan, [Artifact("Old reply.", id="a")], record=True))
    baseline = baseline_from_run(plan, accepted)
    outcome = asyncio.run(check_run(plan, [Artifact("New reply.", id="a")], baseline))
    (result,) = outcome.results
    assert len(asked) > 2 and result.gated and not result.canon  # never tripped on first looks
    assert outcome.comparison.failed


def test_accept_asks_every_question_twice_and_records_the_asks():
    from canon.check.pipeline import baseline_from_run, score_run

    judge = MockJudge(lambda q, _t: "no" if q.id == "G" else "yes")
    plan = ScoringPlan(ONE_PRINCIPLE, RUBRIC, judge, 0.85)
    artifacts = [Artifact("Reply.", id="a")]
    confirmation = asyncio.run(score_run(plan, artifacts, record=True))
    assert judge.calls == 2 * 7 and confirmation.reasks == 7
    record = baseline_from_run(plan, confirmation).artifacts["a"]
    assert record.questions is not None and {q.asks for q in record.questions.values()} == {2}
    assert record.digest is not None and len(record.digest) == 16
