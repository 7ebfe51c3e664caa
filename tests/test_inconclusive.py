"""A check whose judge is too noisy to separate a regression is inconclusive (exit 6)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from canon.core.baseline import baseline_from_results
from canon.core.compare import ReaskNoise, gate
from canon.core.constitution import Constitution, Principle
from canon.core.gate_outcome import GateOutcome
from canon.core.judge_health import inconclusive_reasons
from canon.core.scoring import Answer, ArtifactResult, judge_verdict, score_cell, stopped_verdict
from canon.project.store import load_rubric
from canon.report.check import check_document, render_check
from canon.report.github import github_annotations, github_summary

from support.cli import invoke_quietly as _canon

RUBRIC = load_rubric()
CONSTITUTION = Constitution(
    "Serve customers.", tuple(Principle(f"Principle number {i}.") for i in range(1, 5))
)
QUESTIONS = RUBRIC.questions_for(CONSTITUTION)


def _result(key: str, **replies: str) -> ArtifactResult:
    cells = [
        score_cell(q, Answer({replies.get(q.id, "no" if q.kind == "gate" else "yes"): 1.0}))
        for q in QUESTIONS
    ]
    return judge_verdict(key, cells, 0.5)


def _baseline(results: list[ArtifactResult]):
    # two asks a cell, as accept records them: a settled baseline side
    asks = {(r.key, c.id): 2 for r in results for c in r.cells}
    return baseline_from_results(
        results,
        rubric=RUBRIC,
        judge="mock",
        constitution=CONSTITUTION.digest,
        threshold=0.5,
        asks=asks,
    )


def _varied(count: int) -> list[ArtifactResult]:
    # P1 and P3 satisfied, P2 and P4 violated: the baseline's principle answers vary.
    return [_result(f"a{i}", P2="no", P4="no") for i in range(count)]


def test_a_flip_under_a_judge_noisier_than_flip_rate_is_inconclusive_not_a_regression():
    baseline = _baseline(_varied(2))
    now = [_result("a0", P1="no", P2="no", P4="no"), _result("a1", P2="no", P4="no")]
    loud = gate(now, baseline, 0.5, noise=ReaskNoise(40, 20, 0.15))
    assert loud.regressions and loud.status == "inconclusive"
    assert "disagreed with their majority answer on 20/40" in loud.inconclusive[0]


def test_a_few_disagreeing_reasks_do_not_make_a_check_inconclusive():
    # 3 of 6 is 50 %, above 15 %, but the 99 % Wilson interval's lower end (14 %) is not;
    # 4 of 6 is beyond doubt (23 %).
    baseline = _baseline(_varied(2))
    now = [_result("a0", P1="no", P2="no", P4="no"), _result("a1", P2="no", P4="no")]
    assert gate(now, baseline, 0.5, noise=ReaskNoise(6, 3, 0.15)).status == "regressed"
    assert gate(now, baseline, 0.5, noise=ReaskNoise(6, 4, 0.15)).status == "inconclusive"


def test_one_label_on_almost_every_principle_where_the_baseline_varied_is_inconclusive():
    baseline = _baseline(_varied(6))  # 24 principle cells, half of them "no"
    stuck = [_result(f"a{i}", P1="no", P2="no", P3="no", P4="no") for i in range(6)]
    found = gate(stuck, baseline, 0.5)
    assert found.status == "inconclusive"
    assert any("'no' on 24 of 24 principle" in reason for reason in found.inconclusive)


def test_one_label_the_baseline_also_gave_everywhere_is_not_a_sign_of_a_stuck_judge():
    baseline = _baseline([_result(f"a{i}", P1="no", P2="no", P3="no", P4="no") for i in range(6)])
    now = [_result(f"a{i}", P1="no", P2="no", P3="no", P4="no") for i in range(6)]
    assert inconclusive_reasons(None, now, baseline) == ()


def test_a_small_suite_is_never_called_stuck():
    baseline = _baseline(_varied(4))  # 16 principle cells: fewer than 20
    stuck = [_result(f"a{i}", P1="no", P2="no", P3="no", P4="no") for i in range(4)]
    assert gate(stuck, baseline, 0.5).status == "regressed"


def test_a_deterministic_gate_failure_stays_a_regression_whatever_the_judge_noise():
    baseline = _baseline(_varied(2))
    stopped = stopped_verdict("a0", 0.5, (GateOutcome("policy", "fail", ("bad json",)),))
    found = gate(
        [stopped, _result("a1", P2="no", P4="no")], baseline, 0.5, noise=ReaskNoise(40, 20, 0.15)
    )
    assert found.status == "regressed" and found.inconclusive == ()


def test_reports_say_why_the_check_is_inconclusive_and_call_nothing_a_regression():
    baseline = _baseline(_varied(2))
    now = [_result("a0", P1="no", P2="no", P4="no"), _result("a1", P2="no", P4="no")]
    found = gate(now, baseline, 0.5, noise=ReaskNoise(40, 20, 0.15))
    text = render_check(found, baseline, suite="s", path="b.json", results=now)
    assert "REGRESSION" not in text
    assert (
        text.rstrip()
        .splitlines()[-1]
        .startswith("INCONCLUSIVE: this run cannot tell a regression from the judge's own mistakes")
    )
    document = check_document(found, baseline, suite="s", path="b.json", results=now)
    assert document["status"] == "inconclusive" and document["exit_code"] == 6
    assert document["inconclusive"] == list(found.inconclusive)
    annotations = github_annotations(now, found)
    assert "::error title=Canon inconclusive::" in annotations
    assert "::warning title=Canon suspected regression in a0 P1" in annotations
    assert "INCONCLUSIVE" in github_summary(now, found, suite="s")


# Through the CLI: a project whose judge script later answers "no" to every principle.

_CONSTITUTION = "mission: Serve customers.\nprinciples:\n" + "".join(
    f"  - Principle number {i}.\n" for i in range(1, 5)
)
_VARIED = (
    'contradict any part: "no"\n"Principle number 2": "no"\n"Principle number 4": "no"\n'
    '__default__: "yes"\n'
)
_STUCK = 'contradict any part: "no"\n"Principle number": "no"\n__default__: "yes"\n'


def _project(tmp_path: Path) -> Path:
    (tmp_path / "canon.yaml").write_text(
        "judge_model: mock:script.yaml\nthreshold: 0.5\nconstitution_path: c.yaml\n"
        "suite: suite.yaml\nbaselines_dir: baselines\n",
        encoding="utf-8",
    )
    (tmp_path / "c.yaml").write_text(_CONSTITUTION, encoding="utf-8")
    entries = "".join(f"  - id: a{i}\n    text: Reply number {i}.\n" for i in range(6))
    (tmp_path / "suite.yaml").write_text(f"artifacts:\n{entries}", encoding="utf-8")
    (tmp_path / "script.yaml").write_text(_VARIED, encoding="utf-8")
    return tmp_path


def _reword(project: Path) -> None:
    # an identical text cannot regress on the judge alone: the agent's replies changed
    suite = project / "suite.yaml"
    suite.write_text(suite.read_text().replace("Reply number", "Answer number"))


def test_check_exits_6_when_the_judge_answers_no_to_every_principle(tmp_path):
    project = _project(tmp_path)
    assert _canon(project, "accept").exit_code == 0
    _reword(project)
    (project / "script.yaml").write_text(_STUCK, encoding="utf-8")
    result = _canon(project, "check", "--junit-xml", "r.xml")
    assert result.exit_code == 6, result.output
    assert "INCONCLUSIVE" in result.stdout and "'no' on 24 of 24 principle" in result.stdout
    assert "REGRESSION" not in result.stdout
    suite = ET.parse(project / "r.xml").getroot().find("testsuite")
    assert suite is not None
    kinds = {e.get("type") for e in suite.iter() if e.tag in ("failure", "error")}
    assert kinds == {"inconclusive"}
    document = json.loads(_canon(project, "check", "--format", "json").stdout)
    assert document["status"] == "inconclusive" and document["exit_code"] == 6


def test_check_still_exits_1_when_one_principle_regresses_on_a_steady_judge(tmp_path):
    project = _project(tmp_path)
    assert _canon(project, "accept").exit_code == 0
    _reword(project)
    (project / "script.yaml").write_text('"Principle number 1": "no"\n' + _VARIED, encoding="utf-8")
    result = _canon(project, "check")
    assert result.exit_code == 1, result.output
    assert "REGRESSION" in result.stdout


def _moves(regressed: int, recovered: int, steady: int = 4):
    """A baseline where ``recovered`` artifacts were non-canon; now ``regressed`` others are."""
    then = [_result(f"r{i}", G="yes") for i in range(recovered)]
    then += [_result(f"f{i}") for i in range(regressed)]
    then += [_result(f"s{i}") for i in range(steady)]
    now = [_result(f"r{i}") for i in range(recovered)]
    now += [_result(f"f{i}", G="yes") for i in range(regressed)]
    now += [_result(f"s{i}") for i in range(steady)]
    return gate(now, _baseline(then), 0.5)


def test_a_judge_that_moves_artifacts_both_ways_on_reworded_texts_is_inconclusive():
    # Two out of canon, two back in: what a judge whose misreadings stick to a text does
    # when every text is reworded; the agent did not regress and improve at once.
    found = _moves(regressed=2, recovered=2)
    assert {n.key for n in found.failures} == {"f0", "f1"}
    assert found.status == "inconclusive"
    reason = found.inconclusive[0]
    assert "moved 2 artifact(s) to failing and 2 back to passing (r0, r1)" in reason
    assert "sign test p = 0.69" in reason and "replicates" in reason


def test_one_artifact_back_to_canon_is_no_control_and_the_regression_stands():
    # One recovery can be a true fix (or one noisy pass on a failing artifact).
    assert _moves(regressed=1, recovered=1).status == "regressed"


def test_many_more_moves_to_failing_than_back_are_a_regression_beyond_the_judges_noise():
    # 10 of 12 toward failing: one-sided sign test p = 79/4096 = 0.019 < 0.05
    assert _moves(regressed=10, recovered=2).status == "regressed"
    # 5 of 7 is what a coin does one time in four: the judge cannot separate it
    assert _moves(regressed=5, recovered=2).status == "inconclusive"


def test_texts_identical_to_the_baselines_are_not_counted_as_moves():
    then = [_result(f"r{i}", G="yes") for i in range(3)] + [_result("f0"), _result("f1")]
    now = [_result(f"r{i}") for i in range(3)] + [_result("f0", G="yes"), _result("f1", G="yes")]
    baseline = _baseline(then)
    failing = {"f0", "f1"}
    (reason,) = inconclusive_reasons(None, now, baseline, regressed=failing, unchanged={"r0"})
    assert "2 back to passing (r1, r2)" in reason
    # r0 and r1 kept their texts: one move back is left, no control
    assert not inconclusive_reasons(None, now, baseline, regressed=failing, unchanged={"r0", "r1"})


def test_the_sign_test_is_the_exact_binomial_tail():
    from canon.core.judge_health import sign_test_p

    assert sign_test_p(1, 0) == 0.5
    assert sign_test_p(2, 2) == 11 / 16
    assert sign_test_p(10, 2) == 79 / 4096
    assert sign_test_p(0, 3) == 1.0
