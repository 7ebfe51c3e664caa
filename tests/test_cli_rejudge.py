"""`canon rejudge` compares two judges on the baseline's own artifacts before any accept,
and `canon check` with another judge says the judge changed instead of reporting regressions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support.cli import copy_example, invoke_in, one_error_line, run_canon
from support.cli import invoke_quietly as _canon

BASELINE = Path("baselines") / "suite.json"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The example project, accepted, with a second script that denies P2 everywhere."""
    target = copy_example(tmp_path)
    script = (target / "judge-script.yaml").read_text()
    (target / "strict-judge.yaml").write_text('refund above 200: "no"\n' + script)
    assert _canon(target, "accept").exit_code == 0
    return target


def test_rejudging_with_the_same_script_agrees_everywhere_and_writes_nothing(project):
    before = (project / BASELINE).read_bytes()
    result = _canon(project, "rejudge", "--judge", "mock:judge-script.yaml")
    assert result.exit_code == 0, result.output
    assert "flips (0):" in result.stdout
    assert "agreement 3/3 = 100%" in result.stdout
    assert result.stdout.rstrip().endswith('--accept"')
    assert (project / BASELINE).read_bytes() == before


def test_rejudge_lists_every_flip_with_kappa_per_question_and_writes_nothing(project):
    before = (project / BASELINE).read_bytes()
    result = _canon(project, "rejudge", "--judge", "mock:strict-judge.yaml")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert (
        "baseline judged by mock:judge-script.yaml, now by mock:strict-judge.yaml"
        in out.splitlines()[0]
    )
    p2 = next(line for line in out.splitlines() if line.startswith("  P2 [escalate-large-refunds]"))
    assert "agreement 0/3 = 0%  kappa 0.00" in p2
    assert "flips (3):" in out
    for key in ("duplicate-charge", "large-refund", "roaming-question"):
        assert f"  {key} P2 [escalate-large-refunds]: old yes -> new no" in out
    assert "    old judge: (no reason recorded)" in out
    assert "nothing written" in out
    assert (project / BASELINE).read_bytes() == before


def test_rejudge_json_has_per_question_kappa_and_flips(project):
    result = _canon(project, "rejudge", "--judge", "mock:strict-judge.yaml", "--format", "json")
    document = json.loads(result.stdout)
    assert document["old_judge"] == "mock:judge-script.yaml"
    assert document["new_judge"] == "mock:strict-judge.yaml" and document["accepted"] is False
    p2 = document["questions"]["P2"]
    assert p2["n"] == 3 and p2["agreement"] == 0.0 and p2["kappa"] == 0.0
    assert [f["artifact"] for f in p2["flips"]] == [
        "duplicate-charge",
        "large-refund",
        "roaming-question",
    ]
    assert p2["flips"][0]["old"] == "yes" and p2["flips"][0]["new"] == "no"
    assert document["questions"]["G"]["flips"] == []


def test_accept_writes_the_new_judges_baseline_and_a_check_with_it_conforms(project):
    result = _canon(project, "rejudge", "--judge", "mock:strict-judge.yaml", "--accept")
    assert result.exit_code == 0, result.output
    assert "accepted: 3 artifact(s) judged by mock:strict-judge.yaml -> baselines/suite.json" in (
        result.stdout
    )
    data = json.loads((project / BASELINE).read_text())
    assert data["judge"] == "mock:strict-judge.yaml"
    assert data["artifacts"]["large-refund"]["questions"]["P2"]["score"] == 0.0
    config = project / "canon.yaml"
    config.write_text(
        config.read_text().replace("mock:judge-script.yaml", "mock:strict-judge.yaml")
    )
    check = _canon(project, "check")
    assert check.exit_code == 0, check.output


def test_a_check_with_another_judge_says_judge_changed_instead_of_regressions(project):
    config = project / "canon.yaml"
    config.write_text(
        config.read_text().replace("mock:judge-script.yaml", "mock:strict-judge.yaml")
    )
    result = _canon(project, "check")
    assert result.exit_code == 2 and result.stdout == ""
    assert one_error_line(result) == (
        "canon: error: judge changed (baseline baselines/suite.json judged by "
        'mock:judge-script.yaml, this run by mock:strict-judge.yaml): run "canon rejudge '
        "--judge mock:strict-judge.yaml\" to compare the two judges on the baseline's artifacts "
        "before accepting; no regression was looked for"
    )


def test_a_check_with_another_judge_is_refused_by_a_real_process_too(project):
    config = project / "canon.yaml"
    config.write_text(
        config.read_text().replace("mock:judge-script.yaml", "mock:strict-judge.yaml")
    )
    done = run_canon(project, "check", "--quiet")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("canon: error: judge changed (baseline baselines/suite.json")


def test_rejudge_leaves_out_and_names_baseline_artifacts_the_suite_lost(project):
    suite = project / "suite.yaml"
    text = suite.read_text()
    suite.write_text(text[: text.index("  - id: roaming-question")])
    result = _canon(project, "rejudge", "--judge", "mock:strict-judge.yaml")
    assert result.exit_code == 0, result.output
    assert "2 artifact(s) of baselines/suite.json" in result.stdout
    assert (
        "note: 1 baseline artifact(s) not in the suite, not re-judged: roaming-question"
        in result.stdout
    )


def test_rejudge_without_a_baseline_exits_2(project):
    (project / BASELINE).unlink()
    result = _canon(project, "rejudge", "--judge", "mock:strict-judge.yaml")
    assert result.exit_code == 2
    assert "no baseline for suite 'suite'" in one_error_line(result)


def test_rejudge_with_a_malformed_judge_exits_2_naming_it(project):
    result = _canon(project, "rejudge", "--judge", "not a model")
    assert result.exit_code == 2
    assert "'not a model' is not of the form provider:model" in one_error_line(result)
    missing = _canon(project, "rejudge", "--judge", "mock:nowhere.yaml")
    assert missing.exit_code == 2 and "nowhere.yaml" in one_error_line(missing)


def test_rejudge_on_a_suite_sharing_nothing_with_the_baseline_exits_2(project):
    (project / "other.yaml").write_text("artifacts:\n  - id: fresh\n    text: Something new.\n")
    shutil.copy(project / BASELINE, project / "baselines" / "other.json")
    result = _canon(
        project, "rejudge", "--judge", "mock:strict-judge.yaml", "--suite", "other.yaml"
    )
    assert result.exit_code == 2
    assert "no artifact of the baseline" in one_error_line(result)


def test_rejudge_needs_a_judge(project):
    result = _canon(project, "rejudge")
    assert result.exit_code == 2 and "Missing option '--judge'" in result.stderr


def test_a_new_judge_that_cannot_answer_exits_3_and_writes_nothing(project, monkeypatch):
    import canon.check.plan as plan_module
    from canon.errors import JudgeUnavailableError
    from canon.judge.mock import MockJudge

    def down(question, text):
        if question.id == "P1":
            raise JudgeUnavailableError("connection refused")
        return "n/a" if question.id == "tradeoff" else ("no" if question.id == "G" else "yes")

    monkeypatch.setattr(plan_module, "judge_from_spec", lambda spec, **_: MockJudge(down, name="x"))
    before = (project / BASELINE).read_bytes()
    result = _canon(project, "rejudge", "--judge", "mock:strict-judge.yaml", "--accept")
    assert result.exit_code == 3
    assert "the new judge left 3 question(s) unanswered (first: " in one_error_line(result)
    assert (project / BASELINE).read_bytes() == before


def test_rejudge_refuses_a_score_only_baseline_before_asking(project):
    legacy = {
        "format": 1,
        "rubric": {"id": "cdt", "version": "1.0.0"},
        "artifacts": {"large-refund": {"score": 1.0, "gated": False}},
    }
    (project / BASELINE).write_text(json.dumps(legacy))
    result = _canon(project, "rejudge", "--judge", "mock:strict-judge.yaml")
    assert result.exit_code == 2
    assert "is a format 1 baseline (overall scores only)" in one_error_line(result)


def test_rejudge_shows_a_progress_line_per_artifact_unless_quiet(project):
    result = invoke_in(project, "rejudge", "--judge", "mock:strict-judge.yaml")
    assert result.exit_code == 0, result.output
    progress = [line for line in result.stderr.splitlines() if line.startswith("[")]
    # one line per artifact as it is answered, counting up to all three
    assert [line.split()[0] for line in progress] == ["[1/3]", "[2/3]", "[3/3]"]
    keys = sorted(line.split()[1] for line in progress)
    assert keys == ["duplicate-charge", "large-refund", "roaming-question"]
    assert _canon(project, "rejudge", "--judge", "mock:strict-judge.yaml").stderr == ""
