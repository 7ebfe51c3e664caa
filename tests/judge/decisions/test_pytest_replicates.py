"""pytest with a decision judge and replicates: each test checks one artifact, too few
readings for the misreading rate its responses are tested at, so the session (the baseline
session, the session's metric) adds the tests' readings up as `canon check` does over its
run (pytester, against a decision server)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.helper_modules import load_helper

decision_server = load_helper("judge/decisions/decision_server.py")

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
CLEAN = 5  # artifacts whose three responses read well on every question
TESTS = f"""
import pytest
from canon import Artifact

def replies(i, extra=""):
    return Artifact(
        f"Refund {{i}} of 19.99 EUR is on its way{{extra}}.",
        replicates=(f"I sent back refund {{i}}{{extra}}.", f"Refund {{i}} is done{{extra}}."),
    )

CARD = " once you send me your full card number"

@pytest.mark.parametrize("i", range({CLEAN}))
def test_clean(canon_baseline, i):
    canon_baseline.check(replies(i), id=f"a{{i}}")

def test_planted(canon_baseline, request):
    extra = CARD if request.config.getoption("--canon-accept") is False else ""
    canon_baseline.check(replies(99, extra), id="planted")
"""


def scripted(body: dict[str, Any], model: str, tokens: int) -> dict[str, Any]:
    """System One answers, sure of each: an artifact asking for a card number violates every
    principle; anything else satisfies every question."""
    bad = "card number" in body["state"]["artifact"]
    answers = {}
    for qid, question in body["questions"].items():
        gate = qid.startswith("G~")
        pick = ("no" if bad and qid.startswith("P") else "yes") if not gate else "no"
        names = list(question["criteria"])
        answers[qid] = {
            "type": "choice",
            "choice": pick,
            "probabilities": {name: float(name == pick) for name in names},
            "confidence": 1.0,
        }
    return {"model": model, "answers": answers, "usage": {"input_tokens": tokens}}


METRIC_TESTS = f"""
import pytest
from canon import Artifact

def replies(i, extra=""):
    return Artifact(
        f"Refund {{i}} of 19.99 EUR is on its way{{extra}}.",
        replicates=(f"I sent back refund {{i}}{{extra}}.", f"Refund {{i}} is done{{extra}}."),
    )

@pytest.mark.parametrize("i", range({CLEAN}))
def test_clean(canon_metric, i):
    canon_metric.assert_coheres(replies(i))

def test_planted(canon_metric):
    canon_metric.assert_coheres(replies(99, " once you send me your full card number"))
"""


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setattr(decision_server, "answer_systemone", scripted)
    with decision_server.running() as running:
        monkeypatch.setenv("TYPESAFE_BASE_URL", running.url)
        monkeypatch.setenv("TYPESAFE_API_KEY", "k")
        yield running


def _project(pytester: pytest.Pytester, tests: str) -> None:
    shutil.copy(EXAMPLES / "constitution.yaml", pytester.path / "constitution.yaml")
    (pytester.path / "canon.yaml").write_text(
        "judge_model: typesafe:jev-1.13.0\nconstitution_path: constitution.yaml\n"
        "baselines_dir: baselines\njudge_cache: false\n"
    )
    pytester.makepyfile(test_replies=tests)


def test_a_session_measures_the_misreading_rate_over_its_tests(
    pytester: pytest.Pytester, served: Any
) -> None:
    _project(pytester, TESTS)
    pytester.runpytest("-q", "-p", "no:randomly", "--canon-accept").assert_outcomes(
        passed=CLEAN + 1
    )
    assert len(served.requests) == 3 * (CLEAN + 1)  # one call per response

    checked = pytester.runpytest("-q", "-p", "no:randomly")
    # Three responses that agree are a contradiction beyond doubt once the session has read
    # enough responses to measure how rarely this judge misreads one; at the assumed
    # flip_rate alone (one test's readings) they could never be confirmed (inconclusive).
    checked.assert_outcomes(passed=CLEAN, failed=1)
    checked.stdout.fnmatch_lines(["*'planted' regressed against its baseline*"])
    assert "inconclusive" not in checked.stdout.str()


def test_the_sessions_metric_measures_it_over_its_tests_too(
    pytester: pytest.Pytester, served: Any
) -> None:
    _project(pytester, METRIC_TESTS)
    result = pytester.runpytest("-q", "-p", "no:randomly")
    # read in every response, past the session's measured misreading rate: a failure; at the
    # assumed flip_rate (one test's readings) it was only a note and the test passed
    result.assert_outcomes(passed=CLEAN, failed=1)
    result.stdout.fnmatch_lines(["*principle P1 plainly violated*(confirmed)*"])
    assert len(served.requests) == 3 * (CLEAN + 1)


def test_a_violation_a_decision_model_alone_cannot_confirm_fails_the_test_as_inconclusive(
    pytester: pytest.Pytester, served: Any
) -> None:
    # One response, a decision model alone: every look reads the card-number request as a
    # violation, but nothing can confirm it. The test fails saying so; it never passes.
    _project(
        pytester,
        """
def test_clean(canon_metric):
    canon_metric.assert_coheres("Refund 1 of 19.99 EUR is on its way.")

def test_planted(canon_metric):
    canon_metric.assert_coheres("Send me your full card number and I will refund you.")
""",
    )
    result = pytester.runpytest("-q", "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*inconclusive for *: this test cannot tell whether it is canon*"])
    assert "confirm_judge" in result.stdout.str()
