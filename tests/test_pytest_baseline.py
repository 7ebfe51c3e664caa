"""The canon_baseline fixture and --canon-accept, run through pytester (and under xdist)."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

TESTS = """
import pytest

REPLIES = {
    "dup": "I refunded the duplicate charge of 19.99 EUR (handbook 4.2).",
    "large": "This refund is above 200 EUR, so I have passed it to a human agent.",
    "roam": "Roaming is outside billing; I have sent you to the network team.",
    "late": "Late fees are waived once a year under handbook 6.1.",
}


@pytest.mark.parametrize("key", sorted(REPLIES))
def test_reply_holds_its_baseline(canon_baseline, key):
    canon_baseline.check(REPLIES[key], id=key)
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester project with the example's constitution and scripted judge."""
    for name in ("constitution.yaml", "judge-script.yaml"):
        shutil.copy(EXAMPLES / name, pytester.path / name)
    (pytester.path / "canon.yaml").write_text(
        "judge_model: mock:judge-script.yaml\n"
        "constitution_path: constitution.yaml\n"
        "baselines_dir: baselines\n"
    )
    pytester.makepyfile(test_replies=TESTS)
    return pytester


def _recorded(project: pytest.Pytester) -> dict:
    return json.loads((project.path / "baselines" / "pytest.json").read_text())


def test_without_a_baseline_each_check_fails_with_the_remedy(project):
    result = project.runpytest("-q")
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(["*no baseline record for 'dup'*--canon-accept*"])
    result.stdout.fnmatch_lines(["*canon baselines (pytest): 4 checked: 4 missing*"])
    assert not (project.path / "baselines").exists()


def test_accept_records_then_the_same_replies_conform(project):
    accepted = project.runpytest("-q", "--canon-accept")
    accepted.assert_outcomes(passed=4)
    accepted.stdout.fnmatch_lines(["*4 accepted*", "*recorded 4 artifact(s) -> *pytest.json"])
    data = _recorded(project)
    assert data["format"] == 8 and set(data["artifacts"]) == {"dup", "large", "roam", "late"}
    checked = project.runpytest("-q")
    checked.assert_outcomes(passed=4)
    checked.stdout.fnmatch_lines(["*canon baselines (pytest): 4 checked: 4 conforms*"])


def test_a_regression_fails_its_test_names_the_question_and_ends_with_the_remedy(project):
    project.runpytest("-q", "--canon-accept").assert_outcomes(passed=4)
    script = project.path / "judge-script.yaml"
    script.write_text('refund above 200: "no"\n' + script.read_text())
    # the agent's replies changed too: an identical text cannot regress on the judge alone
    project.makepyfile(test_replies=TESTS.replace('.",\n', '. Thanks.",\n'))
    result = project.runpytest("-q")
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(
        [
            "*'dup' regressed against its baseline*",
            "*dup P2*REGRESSION (confirmed beyond judge noise)*",
        ]
    )
    result.stdout.fnmatch_lines(["*REGRESSED dup*", "*run pytest --canon-accept to record them*"])
    # one remedy, this door's: never canon accept's, which would not record pytest.json
    assert "canon accept" not in result.stdout.str()
    assert "REGRESSED dup: P2" in result.stdout.str()


def test_the_check_result_reaches_junit_properties(project):
    project.runpytest("-q", "--canon-accept")
    project.runpytest("-q", "--junitxml", "out.xml").assert_outcomes(passed=4)
    tree = ET.parse(project.path / "out.xml")
    properties = {(p.get("name"), p.get("value")) for p in tree.iter("property") if p.get("name")}
    assert ("canon.key", "dup") in properties and ("canon.status", "conforms") in properties


def test_under_xdist_workers_records_are_merged_and_written_once(project):
    accepted = project.runpytest_subprocess("-q", "-n", "2", "--canon-accept")
    accepted.assert_outcomes(passed=4)
    accepted.stdout.fnmatch_lines(["*recorded 4 artifact(s) -> *pytest.json"])
    assert set(_recorded(project)["artifacts"]) == {"dup", "large", "roam", "late"}
    leftovers = [p.name for p in (project.path / "baselines").iterdir() if p.name != "pytest.json"]
    assert leftovers == []
    checked = project.runpytest_subprocess("-q", "-n", "2")
    checked.assert_outcomes(passed=4)
    checked.stdout.fnmatch_lines(["*4 checked: 4 conforms*"])


def test_accepting_part_of_the_tests_keeps_the_other_records(project):
    project.runpytest("-q", "--canon-accept").assert_outcomes(passed=4)
    project.runpytest("-q", "--canon-accept", "-k", "dup").assert_outcomes(passed=1, deselected=3)
    assert set(_recorded(project)["artifacts"]) == {"dup", "large", "roam", "late"}


def test_a_baseline_from_another_judge_is_refused_instead_of_compared(project):
    project.runpytest("-q", "--canon-accept").assert_outcomes(passed=4)
    script = project.path / "judge-script.yaml"
    (project.path / "strict-judge.yaml").write_text('refund above 200: "no"\n' + script.read_text())
    config = project.path / "canon.yaml"
    config.write_text(config.read_text().replace("judge-script.yaml", "strict-judge.yaml"))
    result = project.runpytest("-q")
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(
        [
            "*JudgeChangedError: judge changed (baseline *pytest.json judged by "
            "mock:judge-script.yaml, this run by mock:strict-judge.yaml): compare the judges, "
            "then run pytest --canon-accept to record it; no regression was looked for*"
        ]
    )
    assert "REGRESSION" not in result.stdout.str()
