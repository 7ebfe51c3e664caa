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
