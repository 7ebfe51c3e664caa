"""Under pytest a broken judge or config is Canon's error, never an AssertionError (pytester).

The user's tests run in a pytest subprocess against the fake OpenAI server over real HTTP;
an ``openai/`` model at an own endpoint takes the direct call path, so the subprocess never
pays for importing litellm.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

USER_TESTS = """
def test_reply_coheres(canon_metric):
    canon_metric.assert_coheres("I refunded the duplicate charge (Section 4.2).")
"""


@pytest.fixture
def project(pytester, fake_llm, monkeypatch):
    """A project whose canon.yaml names a model judge served by the fake server."""
    pytester.makefile(
        ".yaml",
        canon="judge_model: openai:fake-judge\nconstitution_path: constitution.yaml\n"
        "judge_cache: false\njudge_options: {max_attempts: 2}\n",
        constitution=(EXAMPLES / "constitution.yaml").read_text(),
    )
    pytester.makepyfile(test_agent=USER_TESTS)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return pytester


def _no_assertion_error(result) -> None:
    # The raised error's lines start with "E"; the traceback's quoted source may mention it.
    assert not re.search(r"^E\s+AssertionError", result.stdout.str(), re.MULTILINE)
    assert "AssertionError" not in result.stdout.lines[-2]  # the short summary line


def test_a_judge_outage_is_canons_unavailable_error_not_a_regression(project, fake_llm):
    fake_llm.script("", always="503")
    result = project.runpytest_subprocess("-q")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*JudgeUnavailableError: could not judge artifact*unscored*"])
    _no_assertion_error(result)


def test_a_refused_key_is_a_credential_error_naming_the_variable(project, fake_llm):
    fake_llm.script("", always="401")
    result = project.runpytest_subprocess("-q")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*JudgeCredentialError:*OPENAI_API_KEY*.env next to canon.yaml*"])
    _no_assertion_error(result)
    assert len(fake_llm.requests) == 1  # no retries, and no other question asked


def test_a_judge_that_ignores_the_format_says_how_to_constrain_it(project, fake_llm):
    fake_llm.script("", "I'd rather not grade this.")
    result = project.runpytest_subprocess("-q")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*JudgeFormatError:*ignores the answer format*constrain_answers*"])
    _no_assertion_error(result)


def test_an_unusable_judge_option_is_a_fixture_error(project):
    (project.path / "canon.yaml").write_text(
        "judge_model: openai:fake-judge\nconstitution_path: constitution.yaml\n"
        "judge_options: {transport: carrier-pigeon}\n"
    )
    result = project.runpytest_subprocess("-q")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*ConfigError: *canon.yaml: judge_options:*transport must be one of*"]
    )


def test_a_real_failure_under_a_working_judge_is_still_an_assertion(project, fake_llm):
    fake_llm.script("contradict any part", "ANSWER: yes")  # the NSCP gate trips: evidence
    fake_llm.script("", "ANSWER: yes")
    result = project.runpytest_subprocess("-q")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*AssertionError: non-canon artifact*NSCP gate*"])


def test_a_violation_whose_re_asks_fail_is_a_judge_error_never_a_pass(project, fake_llm):
    # P2 reads violated on its first ask and every re-ask (sampled hot) gets a 503: the test
    # neither passes (the violation "not beyond noise") nor fails as the agent's regression.
    from support.model_judge import P2_MATCH, script_p2_violation

    fake_llm.script(P2_MATCH, "It decided the refund itself.\nANSWER: no", hot="503")
    script_p2_violation(fake_llm, "It decided the refund itself.")
    result = project.runpytest_subprocess("-q")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*JudgeUnavailableError: could not judge artifact*unscored*"])
    _no_assertion_error(result)
    assert any(r.get("temperature") for r in fake_llm.requests), "P2 was never re-asked"


BASELINE_TESTS = """
def test_reply_holds_its_baseline(canon_baseline):
    canon_baseline.check("I refunded the duplicate charge (Section 4.2).", id="dup")
"""


def test_a_pytest_baseline_judged_from_labels_is_checked_reading_labels(project, fake_llm):
    # The pytest door reads a baseline as the CLI does: one recorded before logprobs: auto
    # is checked from labels (its scores would all seem to drop otherwise); accepted again,
    # the baseline holds probabilities and tests read them.
    fake_llm.script("contradict any part", "ANSWER: no")
    fake_llm.script("", "ANSWER: yes", top={"yes": 0.8, "partly": 0.2})
    project.makepyfile(test_agent=BASELINE_TESTS)
    config = project.path / "canon.yaml"
    plain = config.read_text().rstrip("\n") + "\nbaselines_dir: baselines\n"
    config.write_text(plain.replace("{max_attempts: 2}", "{max_attempts: 2, logprobs: false}"))
    project.runpytest_subprocess("-q", "--canon-accept").assert_outcomes(passed=1)
    recorded = project.path / "baselines" / "pytest.json"
    assert '"logprobs": false' in recorded.read_text()
    config.write_text(plain)  # the default: auto
    asked = len(fake_llm.requests)
    project.runpytest_subprocess("-q").assert_outcomes(passed=1)
    assert not any(body.get("logprobs") for body in fake_llm.requests[asked:])
    project.runpytest_subprocess("-q", "--canon-accept").assert_outcomes(passed=1)
    assert '"logprobs": true' in recorded.read_text()
    asked = len(fake_llm.requests)
    project.runpytest_subprocess("-q").assert_outcomes(passed=1)
    assert all(body.get("logprobs") is True for body in fake_llm.requests[asked:])


def test_a_pytest_baseline_judged_from_one_answer_an_ask_is_checked_asking_one(project, fake_llm):
    # A judge read from labels asks three answers an ask by default (samples: auto); a
    # baseline judged from one (before format 8, or samples: 1) is checked asking one, as
    # the CLI does, and accepted again it records three.
    fake_llm.script("contradict any part", "ANSWER: no")
    fake_llm.script("", "ANSWER: yes")
    project.makepyfile(test_agent=BASELINE_TESTS)
    config = project.path / "canon.yaml"
    labels = (
        config.read_text()
        .rstrip("\n")
        .replace("{max_attempts: 2}", "{max_attempts: 2, logprobs: false}")
    )
    labels += "\nbaselines_dir: baselines\n"
    config.write_text(labels.replace("logprobs: false", "logprobs: false, samples: 1"))
    project.runpytest_subprocess("-q", "--canon-accept").assert_outcomes(passed=1)
    recorded = project.path / "baselines" / "pytest.json"
    assert '"samples": 1' in recorded.read_text()
    config.write_text(labels)  # samples: auto
    asked = len(fake_llm.requests)
    project.runpytest_subprocess("-q").assert_outcomes(passed=1)
    assert all(body.get("n", 1) == 1 for body in fake_llm.requests[asked:])
    project.runpytest_subprocess("-q", "--canon-accept").assert_outcomes(passed=1)
    assert '"samples": 3' in recorded.read_text()
    asked = len(fake_llm.requests)
    project.runpytest_subprocess("-q").assert_outcomes(passed=1)
    assert all(body.get("n") == 3 for body in fake_llm.requests[asked:])
