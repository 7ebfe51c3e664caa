"""Canon used the way a team uses it: inside their own pytest suite (run through pytester)."""

from __future__ import annotations

from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

USER_TESTS = f"""
from canon import CoherenceMetric, constitution_from_file
from canon.judge.mock import MockJudge

CONSTITUTION = constitution_from_file({str(EXAMPLES / "constitution.yaml")!r})


def test_coherent_reply():
    judge = MockJudge(script={{"contradict": "no", "__default__": "yes"}})
    CoherenceMetric(constitution=CONSTITUTION, judge=judge).assert_coheres("Refunded.")


def test_contradicting_reply():
    judge = MockJudge(script={{"contradict": "yes", "__default__": "yes"}})
    CoherenceMetric(constitution=CONSTITUTION, judge=judge).assert_coheres("I made up a rule.")


def test_mis_scripted_judge():
    judge = MockJudge(script={{"serve the mission": "yes"}})
    CoherenceMetric(constitution=CONSTITUTION, judge=judge).assert_coheres("Refunded.")
"""


def test_assert_coheres_reports_through_pytest(pytester):
    pytester.makepyfile(test_agent=USER_TESTS)
    result = pytester.runpytest_subprocess("-q")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*AssertionError: non-canon artifact*NSCP gate*"])
    result.stdout.fnmatch_lines(["*JudgeScriptError: MockJudge has no answer for question*"])


def test_the_canon_plugin_is_registered_with_pytest(pytester):
    result = pytester.runpytest_subprocess("--trace-config", "-q")
    result.stdout.fnmatch_lines(["*canon.pytest_plugin*"])


PROJECT_CONFIG = """
judge_model: mock:script.yaml
threshold: 0.85
constitution_path: constitution.yaml
"""


def _project(pytester, script: str) -> None:
    pytester.makefile(".yaml", canon=PROJECT_CONFIG, script=script)
    constitution = (EXAMPLES / "constitution.yaml").read_text()
    pytester.makefile(".yaml", constitution=constitution)
    pytester.makepyfile(
        test_fixtures="""
def test_reply_coheres(canon_metric):
    canon_metric.assert_coheres("I refunded the duplicate charge (Section 4.2).")


def test_constitution_is_loaded(canon_constitution):
    assert len(canon_constitution.principles) == 4
"""
    )


def test_canon_metric_fixture_is_built_from_the_project_config(pytester):
    _project(pytester, 'contradict: "no"\n__default__: "yes"\n')
    result = pytester.runpytest_subprocess("-q")
    result.assert_outcomes(passed=2)


def test_canon_metric_fixture_fails_a_non_canon_reply(pytester):
    _project(pytester, 'contradict: "yes"\n__default__: "yes"\n')
    result = pytester.runpytest_subprocess("-q")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*non-canon artifact*NSCP gate*"])


def test_canon_config_option_names_the_config_file(pytester):
    _project(pytester, '__default__: "yes"\ncontradict: "no"\n')
    moved = pytester.path / "ci"
    moved.mkdir()
    (pytester.path / "canon.yaml").rename(moved / "canon.yaml")
    # With --config, relative paths stay relative to where pytest runs (the project root).
    result = pytester.runpytest_subprocess("-q", "--canon-config", "ci/canon.yaml")
    result.assert_outcomes(passed=2)


def test_a_broken_config_is_a_setup_error_naming_the_problem_not_a_failure(pytester):
    _project(pytester, '__default__: "yes"\n')
    (pytester.path / "canon.yaml").write_text("rubric: mine.yaml\n")
    result = pytester.runpytest_subprocess("-q")
    result.assert_outcomes(errors=2)
    # The fixture raises Canon's own error (a CanonError), so both tests are errors.
    result.stdout.fnmatch_lines(["*RubricOverrideError:*fixed, versioned rubric*"])
