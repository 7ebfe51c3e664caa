from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

import canon.cli.baseline as baseline_cli
from canon.check.pipeline import baseline_from_run, check_run, score_run
from canon.check.runner import ScoringPlan
from canon.cli import main
from canon.core.evidence import DecisionRule
from canon.core.rubric import Question
from canon.errors import JudgeUnavailableError
from canon.judge.mock import MockJudge
from canon.project.store import constitution_from_file, load_rubric
from canon.project.suite import read_suite

from support.cli import copy_example, one_error_line
from support.cli import invoke_quietly as _canon

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
BASELINE = Path("baselines") / "suite.json"
FLIP_P2 = 'refund above 200: "no"\n'  # a judge-script line that turns P2 into a violation


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the bundled example project."""
    target = copy_example(tmp_path)
    return target


def _prepend(path: Path, text: str) -> None:
    path.write_text(text + path.read_text(encoding="utf-8"), encoding="utf-8")


def _change_agent(project: Path, script_line: str) -> None:
    """The agent's replies changed (new wording) and the judge reads them differently.

    Both are needed: an identical text cannot regress on the judge's say-so alone.
    """
    _prepend(project / "judge-script.yaml", script_line)
    suite = project / "suite.yaml"
    text = suite.read_text(encoding="utf-8")
    suite.write_text(text.replace("    text: >-\n      ", "    text: >-\n      Hello. "), "utf-8")


def test_accept_writes_the_baseline_and_reaccepting_is_byte_identical(project):
    first = _canon(project, "accept")
    assert first.exit_code == 0, first.output
    assert "3 artifact(s) (3 canon, 0 non-canon) -> baselines/suite.json" in first.stdout
    written = (project / BASELINE).read_bytes()
    data = json.loads(written)
    assert data["format"] == 8 and data["judge"] == "mock:judge-script.yaml"
    assert set(data["artifacts"]) == {"duplicate-charge", "large-refund", "roaming-question"}
    again = _canon(project, "accept")
    assert "(unchanged)" in again.stdout
    assert (project / BASELINE).read_bytes() == written


def test_check_after_accept_conforms(project):
    _canon(project, "accept")
    result = _canon(project, "check")
    assert result.exit_code == 0, result.output
    assert result.stdout.rstrip().endswith("CONFORMS to the baseline")
    assert "3 matched, 0 new" in result.stdout


def test_check_without_a_baseline_exits_2_and_says_to_accept(project):
    result = _canon(project, "check")
    assert result.exit_code == 2 and result.stdout == ""
    assert one_error_line(result) == (
        "canon: error: no baseline for suite 'suite' at baselines/suite.json; run \"canon accept\""
    )


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{not json", "baseline is not valid JSON"),
        ('{"format": 9}', "written by a newer Canon (baseline format 9)"),
        ('{"format": 0}', "unknown baseline format 0"),
        ("[]", "a baseline is a JSON object"),
    ],
)
def test_an_unusable_baseline_exits_2_naming_the_file(project, text, fragment):
    (project / "baselines").mkdir()
    (project / BASELINE).write_text(text, encoding="utf-8")
    result = _canon(project, "check")
    assert result.exit_code == 2
    line = one_error_line(result)
    assert "baselines/suite.json" in line and fragment in line


def test_a_baseline_from_another_rubric_version_is_refused(project):
    _canon(project, "accept")
    data = json.loads((project / BASELINE).read_text())
    data["rubric"]["version"] = "0.9.0"
    (project / BASELINE).write_text(json.dumps(data))
    result = _canon(project, "check")
    assert result.exit_code == 2
    line = one_error_line(result)
    assert "rubric changed" in line and '"canon accept" again' in line


def test_a_flipped_facet_exits_1_naming_the_artifact_and_question(project):
    _canon(project, "accept")
    _change_agent(project, FLIP_P2)
    result = _canon(project, "check")
    assert result.exit_code == 1
    assert "duplicate-charge P2" in result.stdout
    assert "REGRESSION (confirmed beyond judge noise)" in result.stdout
    assert result.stdout.rstrip().endswith(
        'run "canon accept" to record this run as the new baseline'
    )


def test_check_json_report_is_machine_readable(project):
    _canon(project, "accept")
    _change_agent(project, FLIP_P2)
    result = _canon(project, "check", "--format", "json")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["status"] == "regressed" and document["exit_code"] == 1
    assert {(f["key"], f["question"], f["status"]) for f in document["flips"]} == {
        (key, "P2", "confirmed") for key in ("duplicate-charge", "large-refund", "roaming-question")
    }
    assert document["drift"]["test"] == "sign-flip"
    # a confirmed "no" on a principle fails each artifact outright (part of the gate)
    assert document["canon_rate"]["now"]["wilson_95"][0] == 0.0
    assert document["drift"]["underpowered"] is True  # 3 pairs: p >= 1/8, nothing to show
    assert "minimum_detectable_drop" in document["drift"]


def test_a_policy_stopped_artifact_fails_the_check(project):
    _canon(project, "accept")
    (project / "responses" / "large-refund.json").write_text('{"decision": "shrug"}')
    result = _canon(project, "check")
    assert result.exit_code == 1
    assert "large-refund: policy gate failed" in result.stdout


def test_a_removed_artifact_is_a_note_and_check_still_conforms(project):
    _canon(project, "accept")
    suite = project / "suite.yaml"
    text = suite.read_text()
    suite.write_text(text[: text.index("  - id: roaming-question")])
    result = _canon(project, "check")
    assert result.exit_code == 0, result.output
    assert "not in this run: roaming-question" in result.stdout
    assert 'run "canon accept"' in result.stdout.splitlines()[-1]


def test_a_legacy_baseline_gates_on_the_mean_with_a_note(project):
    (project / "baselines").mkdir()
    legacy = {
        "format": 1,
        "rubric": {"id": "cdt", "version": load_rubric().version},
        "artifacts": {
            k: {"score": 1.0, "gated": False}
            for k in ("duplicate-charge", "large-refund", "roaming-question")
        },
    }
    (project / BASELINE).write_text(json.dumps(legacy))
    result = _canon(project, "check")
    assert result.exit_code == 0, result.output
    assert "format 1" in result.stdout and "Layer 1" in result.stdout
    _change_agent(project, FLIP_P2)
    regressed = _canon(project, "check")
    assert regressed.exit_code == 1
    # three pairs cannot show a drop (p >= 1/8); the confirmed plain violations fail the run
    assert "principle P2 plainly violated" in regressed.stdout
    assert "no drop can be shown" in regressed.stdout
    assert "flips" not in regressed.stdout


def _mission_question_down(question: Question, text: str) -> str:
    """A judge that answers every question but one, which stays unavailable after retries."""
    if question.id == "mission":
        raise JudgeUnavailableError("rate limited after 3 retries")
    return {"G": "no", "tradeoff": "n/a"}.get(question.id, "yes")


def _with_judge(monkeypatch, script) -> MockJudge:
    """Make the CLI use a MockJudge driven by a callable instead of the YAML script (under
    the script's name: it stands in for the same judge, so the check does not refuse it)."""
    judge = MockJudge(script, name="mock:judge-script.yaml")
    original = baseline_cli.build_plan
    monkeypatch.setattr(
        baseline_cli,
        "build_plan",
        lambda config, **options: dataclasses.replace(original(config, **options), judge=judge),
    )
    return judge


def test_a_flip_the_judge_does_not_repeat_on_reask_is_only_a_note(project, monkeypatch):
    _canon(project, "accept")
    asked: dict[str, int] = {}

    def fickle(question: Question, text: str) -> str:
        if question.id == "G":
            return "no"
        if question.id != "P2" or not text.startswith("I can see"):
            return "n/a" if question.id == "tradeoff" else "yes"
        asked["P2"] = asked.get("P2", 0) + 1
        return "no" if asked["P2"] == 1 else "yes"  # wrong once, right when asked again

    _with_judge(monkeypatch, fickle)
    result = _canon(project, "check")
    # the first answer and six re-asks that do not repeat it: two could be a coin flip's
    assert asked["P2"] == 7
    assert result.exit_code == 0, result.output
    assert "duplicate-charge P2" in result.stdout and "not repeated on re-ask" in result.stdout
    assert "did not repeat it" in result.stdout


def test_an_unreachable_judge_exits_3_for_check_and_writes_nothing_on_accept(project, monkeypatch):
    _canon(project, "accept")
    before = (project / BASELINE).read_bytes()

    _with_judge(monkeypatch, _mission_question_down)
    checked = _canon(project, "check")
    assert checked.exit_code == 3, checked.output
    assert "INCOMPLETE" in checked.stdout
    accepted = _canon(project, "accept")
    assert accepted.exit_code == 3
    assert "baseline was not written" in one_error_line(accepted)
    assert (project / BASELINE).read_bytes() == before


def test_check_run_confirms_a_flip_the_judge_repeats():
    constitution = constitution_from_file(EXAMPLES / "constitution.yaml")
    artifacts = read_suite(EXAMPLES / "suite.yaml")[2:]  # no gates in this plan: text only
    calls = {"count": 0}

    def honest_then_not(question: Question, text: str) -> str:
        if question.id == "G":
            return "no"
        if question.id == "P3":
            calls["count"] += 1
            return "yes" if calls["count"] <= 2 else "no"  # fine at accept (two looks), not after
        return "yes"

    plan = ScoringPlan(constitution, load_rubric(), MockJudge(honest_then_not), 0.5)
    accepted = asyncio.run(score_run(plan, artifacts, record=True))
    baseline = baseline_from_run(plan, accepted)
    reworded = [dataclasses.replace(a, text=a.text + " Thanks.") for a in artifacts]
    outcome = asyncio.run(check_run(plan, reworded, baseline, tolerance=0.02))
    (flip,) = outcome.comparison.flips
    assert (flip.question, flip.status) == ("P3", "confirmed")
    cells = len(plan.questions)
    assert flip.asks == 1 + DecisionRule().reasks_to_confirm(cells)
    assert calls["count"] == 2 + flip.asks  # accept (two looks), then the check and re-asks
    assert outcome.comparison.status == "regressed"


def test_help_lists_accept_and_check():
    result = CliRunner().invoke(main, ["--help"])
    assert "accept" in result.output and "check" in result.output


def _process(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "canon.cli", *args, "--quiet"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_accept_then_check_as_real_processes_catches_a_flipped_facet(project):
    accepted = _process(project, "accept")
    assert accepted.returncode == 0, accepted.stderr
    passed = _process(project, "check")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    _change_agent(project, FLIP_P2)
    failed = _process(project, "check")
    assert failed.returncode == 1, failed.stderr
    assert "large-refund P2" in failed.stdout
    assert "Hand any refund above 200 EUR" in failed.stdout
    assert "Traceback" not in failed.stderr


# --- --junit-xml and --html ---------------------------------------------------------------


def _junit(path: Path) -> tuple[dict[str, str], dict[str, ET.Element], ET.Element]:
    """Counts, testcases by name, and the testsuite element of a written JUnit XML file."""
    (suite,) = ET.parse(path).getroot().findall("testsuite")
    counts = {k: suite.get(k, "") for k in ("tests", "failures", "errors", "skipped")}
    return counts, {case.get("name", ""): case for case in suite.findall("testcase")}, suite


def test_accept_and_a_conforming_check_write_both_reports(project):
    accepted = _canon(project, "accept", "--junit-xml", "a.xml", "--html", "a.html")
    assert accepted.exit_code == 0, accepted.output
    counts, cases, _ = _junit(project / "a.xml")
    assert counts == {"tests": "3", "failures": "0", "errors": "0", "skipped": "0"}
    assert 'data-verdict="canon"' in (project / "a.html").read_text()
    plain = _canon(project, "check")
    checked = _canon(project, "check", "--junit-xml", "c.xml", "--html", "c.html")
    assert checked.exit_code == 0 and checked.stdout == plain.stdout
    counts, cases, suite = _junit(project / "c.xml")
    assert counts == {"tests": "4", "failures": "0", "errors": "0", "skipped": "1"}
    assert list(cases) == ["duplicate-charge", "large-refund", "roaming-question", "mean-drift"]
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["status"] == "conforms" and properties["judge"] == "mock:judge-script.yaml"
    assert '<p class="banner good" id="banner">CONFORMS</p>' in (project / "c.html").read_text()


def test_a_regression_in_check_is_in_both_reports(project):
    _canon(project, "accept")
    _change_agent(project, FLIP_P2)
    result = _canon(project, "check", "--junit-xml", "c.xml", "--html", "c.html")
    assert result.exit_code == 1
    counts, cases, _ = _junit(project / "c.xml")
    assert counts == {"tests": "4", "failures": "3", "errors": "0", "skipped": "0"}
    for key in ("duplicate-charge", "large-refund", "roaming-question"):
        failures = cases[key].findall("failure")
        assert {f.get("type") for f in failures} <= {"regression", "non-canon"}
        assert any(
            "P2 [escalate-large-refunds] flipped from satisfied to violated (confirmed)"
            in (f.get("message") or "")
            for f in failures
        )
    # three pairs: the sign-flip test's smallest p-value is 1/8, so the drift cannot fail
    assert cases["mean-drift"].find("failure") is None
    page = (project / "c.html").read_text()
    assert page.count('<tr class="flips-row regression">') == 3 and "REGRESSION" in page


def test_an_unavailable_judge_still_gets_reports_from_check_and_accept(project, monkeypatch):
    _canon(project, "accept")
    before = (project / BASELINE).read_bytes()

    _with_judge(monkeypatch, _mission_question_down)
    checked = _canon(project, "check", "--junit-xml", "c.xml", "--html", "c.html")
    assert checked.exit_code == 3
    counts, cases, _ = _junit(project / "c.xml")
    assert counts == {
        "tests": "4",
        "failures": "0",
        "errors": "3",
        "skipped": "1",
    }  # identical texts: no drift test
    error = cases["large-refund"].find("error")
    assert error is not None and error.text == "mission: rate limited after 3 retries"
    assert '<p class="banner unsure" id="banner">INCOMPLETE</p>' in (project / "c.html").read_text()
    accepted = _canon(project, "accept", "--junit-xml", "a.xml", "--html", "a.html")
    assert accepted.exit_code == 3
    assert (project / BASELINE).read_bytes() == before
    counts, _, _ = _junit(project / "a.xml")
    assert counts == {"tests": "3", "failures": "0", "errors": "3", "skipped": "0"}
    assert (project / "a.html").read_text().count('data-verdict="incomplete"') == 3


def test_check_refuses_an_unwritable_report_path_before_scoring(project):
    _canon(project, "accept")
    (project / "a-file").write_text("x")
    result = _canon(project, "check", "--html", "a-file/r.html")
    assert result.exit_code == 2 and result.stdout == ""
    assert "cannot write the report a-file/r.html" in one_error_line(result)


def test_the_written_check_report_shows_the_regression_in_chromium(project, page):
    _canon(project, "accept")
    _change_agent(project, FLIP_P2)
    assert _canon(project, "check", "--html", "c.html").exit_code == 1
    url = (project / "c.html").as_uri()
    page.navigate(url)
    seen = page.evaluate(
        """(() => ({
            banner: document.getElementById('banner').textContent,
            verdicts: [...document.querySelectorAll('section.artifact')].map(
                (s) => [s.querySelector('h2').textContent, s.querySelector('.verdict').textContent,
                        s.querySelectorAll('tr.questions-row').length]),
            flips: [...document.querySelectorAll('tr.flips-row td.status')]
                .map((td) => td.textContent),
            drift: document.querySelector('#drift').textContent,
            regressions: [...document.querySelectorAll('section.artifact')].map(
                (s) => [...s.querySelectorAll('ul.regressions li')].map((li) => li.textContent)),
        }))()"""
    )
    assert seen["banner"] == "REGRESSION"
    assert seen["verdicts"] == [
        ["duplicate-charge", "REGRESSED", 10],
        ["large-refund", "REGRESSED", 10],
        ["roaming-question", "REGRESSED", 10],
    ]
    assert seen["flips"] == ["confirmed - regression"] * 3
    assert (
        seen["regressions"]
        == [["P2 [escalate-large-refunds] flipped from satisfied to violated (confirmed)"]] * 3
    )
    # three pairs cannot show a drop (the sign-flip p-value is at least 1/8)
    # and under the red banner the table says so, never a bare "no regression"
    assert "beyond the tolerance but within noise" in seen["drift"]
    assert "no regression" not in seen["drift"] and "underpoweredyes" in seen["drift"]
    assert page.requested_urls() == [url] and page.console_problems() == []


def test_check_writes_reports_as_a_real_process(project):
    assert _process(project, "accept").returncode == 0
    _change_agent(project, FLIP_P2)
    failed = _process(project, "check", "--junit-xml", "out/c.xml", "--html", "out/c.html")
    assert failed.returncode == 1, failed.stderr
    counts, cases, _ = _junit(project / "out" / "c.xml")
    assert counts["failures"] == "3"
    assert cases["large-refund"].find("failure") is not None
    assert "Hand any refund above 200 EUR" in (project / "out" / "c.html").read_text()


def test_known_failures_are_warnings_in_junit_and_github_unless_strict(project, monkeypatch):
    # every artifact contradicts the constitution, in the baseline and now: known failures
    script = project / "judge-script.yaml"
    script.write_text(script.read_text().replace('any part: "no"', 'any part: "yes"'))
    assert _canon(project, "accept").exit_code == 0
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    passed = _canon(project, "check", "--junit-xml", "k.xml", "--format", "github")
    assert passed.exit_code == 0, passed.output
    assert "::error" not in passed.stdout
    assert passed.stdout.count("::warning title=Canon known failure") == 3
    counts, cases, _ = _junit(project / "k.xml")
    # three known failures, and the drift case: identical texts leave Layer 2 nothing to test
    assert counts["failures"] == "0" and counts["skipped"] == "4"
    skipped = cases["large-refund"].find("skipped")
    assert skipped is not None and "known failure" in skipped.get("message", "")
    assert "NSCP" in (cases["large-refund"].findtext("system-out") or "")
    strict = _canon(project, "check", "--strict", "--junit-xml", "s.xml", "--format", "github")
    assert strict.exit_code == 1, strict.output
    assert strict.stdout.count("::error title=Canon non-canon artifact") == 3
    counts, _, _ = _junit(project / "s.xml")
    assert counts["failures"] == "3" and counts["skipped"] == "1"


def test_an_unchanged_text_read_differently_is_a_judge_disagreement_not_a_regression(project):
    assert _canon(project, "accept").exit_code == 0
    _prepend(
        project / "judge-script.yaml", FLIP_P2
    )  # the judge changed its mind, the texts did not
    result = _canon(project, "check")
    assert result.exit_code == 0, result.output
    assert "judge disagreements (canon in the baseline, identical text" in result.stdout
    assert "judge disagreement on an unchanged text" in result.stdout
    strict = _canon(project, "check", "--strict", "--format", "json")
    assert strict.exit_code == 1
    document = json.loads(strict.stdout)
    assert {n["key"] for n in document["non_canon"] if n["unchanged_text"]} == {
        "duplicate-charge",
        "large-refund",
        "roaming-question",
    }


def test_accept_estimates_its_second_look_at_every_question(project):
    score = _canon(project, "score", "--estimate").stdout
    accept = _canon(project, "accept", "--estimate").stdout
    assert "30 question(s) answered by its script" in score
    assert "60 question(s) answered by its script" in accept  # two looks at each of 30
