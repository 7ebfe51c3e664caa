"""What a person sees while the judge waits: backoff lines, timeouts named, window warnings.

The judge layer emits coded notices (canon.judge.notices); the CLI prints them on stderr
(canon.cli.notices). These run the real `canon` as a process against a real HTTP server on
127.0.0.1 that answers 429 with Retry-After, hangs, or serves a model with a known window.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from canon.core.artifact import Artifact
from canon.judge.failures import JudgeTimeoutError
from canon.judge.notices import (
    Backoff,
    ContextOverflow,
    FailureCause,
    Notice,
    NoticeKind,
    listening,
)

from support.cli import run_canon
from support.model_judge import MODEL_JUDGE, model_env, model_project

ONE = "artifacts:\n  - id: refund\n    text: I refunded the duplicate 19.99 EUR charge.\n"
MISSION_Q = "serve the mission"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The example project with one artifact, judged by the fake model with quick retries."""
    options = "judge_options:\n  timeout: 1\n"
    config = MODEL_JUDGE + "suite: one.yaml\njudge_cache: false\n" + options
    return model_project(tmp_path, config, {"one.yaml": ONE})


def _backoff_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "before attempt" in line]


def test_a_rate_limit_is_said_with_its_wait_and_attempt(project: Path, fake_llm: Any) -> None:
    fake_llm.retry_after = "1.5"
    fake_llm.script(MISSION_Q, "ANSWER: yes", faults=["429"])
    fake_llm.script("contradict any part", "ANSWER: no")
    fake_llm.script("", "ANSWER: yes")
    done = run_canon(project, "score", env=model_env(fake_llm.base_url))
    assert done.returncode == 0, done.stderr
    assert _backoff_lines(done.stderr) == [
        "canon: judge openai/fake-judge: rate limited (HTTP 429); waiting 1.5 s before "
        "attempt 2 of 3"
    ]


def test_quiet_silences_backoff_lines(project: Path, fake_llm: Any) -> None:
    fake_llm.retry_after = "0.2"
    fake_llm.script(MISSION_Q, "ANSWER: yes", faults=["429", "500"])
    fake_llm.script("contradict any part", "ANSWER: no")
    fake_llm.script("", "ANSWER: yes")
    done = run_canon(project, "score", "--quiet", env=model_env(fake_llm.base_url))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_a_judge_that_never_answers_in_time_is_named_a_timeout(
    project: Path, fake_llm: Any
) -> None:
    fake_llm.script("", always="hang")
    done = run_canon(project, "score", "--format", "json", env=model_env(fake_llm.base_url))
    assert done.returncode == 3, done.stderr
    lines = _backoff_lines(done.stderr)
    assert lines and all("openai/fake-judge: timeout; waiting" in line for line in lines)
    document = json.loads(done.stdout)
    reasons = [q["error"] for q in document["artifacts"][0]["questions"].values()]
    assert reasons and all("timed out" in reason for reason in reasons), reasons
    assert "timed out" in done.stderr.splitlines()[-1]  # the run's one error line says why


def test_a_timeout_is_its_own_error_kind_and_says_so(
    make_judge: Any, ask: Any, fake_llm: Any, questions: Any
) -> None:
    fake_llm.script(MISSION_Q, always="hang")
    heard: list[Notice] = []
    judge = make_judge(timeout=0.3, max_attempts=2)
    with listening(heard.append), pytest.raises(JudgeTimeoutError) as info:
        asyncio.run(judge.answer(ask(questions["mission"])))
    assert "timed out after 2 attempt(s): no reply within 0.3 s" in str(info.value)
    assert [n.kind for n in heard] == [NoticeKind.BACKOFF]
    data = heard[0].data
    assert isinstance(data, Backoff)
    assert (data.cause, data.status, data.attempt, data.attempts) == (
        FailureCause.TIMEOUT,
        None,
        1,
        2,
    )


def test_without_a_listener_notices_go_nowhere(
    make_judge: Any, ask: Any, fake_llm: Any, questions: Any
) -> None:
    fake_llm.script(MISSION_Q, "ANSWER: yes", faults=["503"])
    answer = asyncio.run(make_judge().answer(ask(questions["mission"])))
    assert answer.distribution == {"yes": 1.0}


def test_an_artifact_longer_than_the_window_is_warned_once_even_when_quiet(
    tmp_path: Path, fake_llm: Any
) -> None:
    # gpt-4o-mini reads 128,000 tokens (litellm's table); this artifact is far longer
    long_text = "The customer wrote at length about the refund. " * 20_000
    suite = {"artifacts": [{"id": "essay", "text": long_text}, {"id": "short", "text": "Ok."}]}
    config = (
        "judge_model: openai:gpt-4o-mini\nconstitution_path: constitution.yaml\n"
        "suite: long.yaml\njudge_cache: false\n"
    )
    project = model_project(tmp_path, config, {"long.yaml": json.dumps(suite)})
    fake_llm.script("contradict any part", "ANSWER: no")
    fake_llm.script("", "ANSWER: yes")
    done = run_canon(project, "score", "--quiet", env=model_env(fake_llm.base_url))
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1, done.stderr
    assert warnings[0].startswith("canon: warning: artifact essay is about ")
    assert "more than the 128,000 judge openai/gpt-4o-mini reads" in warnings[0]


def test_estimate_warns_of_an_artifact_longer_than_the_window_and_asks_nothing(
    tmp_path: Path, fake_llm: Any
) -> None:
    long_text = "The customer wrote at length about the refund. " * 20_000
    suite = {"artifacts": [{"id": "essay", "text": long_text}, {"id": "short", "text": "Ok."}]}
    config = (
        "judge_model: openai:gpt-4o-mini\nconstitution_path: constitution.yaml\n"
        "suite: long.yaml\njudge_cache: false\n"
    )
    project = model_project(tmp_path, config, {"long.yaml": json.dumps(suite)})
    done = run_canon(project, "score", "--estimate", env=model_env(fake_llm.base_url))
    assert done.returncode == 0, done.stderr
    assert fake_llm.requests == []
    warnings = [line for line in done.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1, done.stderr
    assert warnings[0].startswith("canon: warning: artifact essay is ")
    assert "tokens, more than the 128,000 judge openai/gpt-4o-mini reads" in warnings[0]


def test_the_window_warning_counts_tokens_through_litellm(
    make_judge: Any, ask: Any, fake_llm: Any, questions: Any
) -> None:
    fake_llm.script("", "ANSWER: yes")
    judge = make_judge(transport="litellm")
    judge.model = "openai/gpt-4o-mini"
    heard: list[Notice] = []
    text = "The customer wrote at length about the refund. " * 20_000
    request = dataclasses.replace(ask(questions["mission"]), artifact=Artifact(text, id="essay"))
    with listening(heard.append):
        asyncio.run(judge.answer(request))
        asyncio.run(judge.answer(request))  # the same artifact again: no second warning
    [notice] = heard
    data = notice.data
    assert isinstance(data, ContextOverflow) and notice.warning
    assert data.window == 128_000 and data.tokens > 128_000 and not data.approximate
    assert data.artifact == "essay"


@pytest.mark.parametrize("transport", ["direct", "litellm"])
@pytest.mark.parametrize(
    ("fault", "cause", "status"),
    [
        ("429", FailureCause.RATE_LIMITED, 429),
        ("503", FailureCause.OVERLOADED, 503),
        ("500", FailureCause.SERVER_ERROR, 500),
        ("drop", FailureCause.UNREACHABLE, None),
        ("malformed", FailureCause.MALFORMED, None),
    ],
)
def test_each_retried_failure_is_announced_with_its_cause(
    make_judge: Any,
    ask: Any,
    fake_llm: Any,
    questions: Any,
    fault: str,
    cause: FailureCause,
    status: int | None,
) -> None:
    fake_llm.script(MISSION_Q, "ANSWER: yes", faults=[fault])
    heard: list[Notice] = []
    with listening(heard.append):
        answer = asyncio.run(make_judge().answer(ask(questions["mission"])))
    assert answer.distribution == {"yes": 1.0}
    [notice] = heard
    data = notice.data
    assert isinstance(data, Backoff) and not notice.warning
    assert (data.cause, data.status, data.attempt, data.attempts) == (cause, status, 1, 3)
    assert data.model == "openai/fake-judge" and data.wait_s > 0


def test_anthropics_529_is_an_overload_that_shrinks_the_limit() -> None:
    from canon.judge.failures import classify_direct
    from canon.judge.openai_http import EndpointError

    failure = classify_direct(EndpointError(529, "Overloaded", 2.0), "openai/x", "sk")
    assert (failure.kind, failure.cause, failure.status) == (
        "transient",
        FailureCause.OVERLOADED,
        529,
    )
    assert failure.overload and failure.retry_after == 2.0


def test_a_listener_hears_the_judge_run_synchronously_inside_a_running_loop() -> None:
    # run_sync hops to a helper thread when a loop is running (notebooks, pytest-asyncio)
    from canon.judge.notices import backoff
    from canon.judge.sync import run_sync

    async def failing_call() -> None:
        backoff("openai/x", FailureCause.TIMEOUT, None, 1.0, 1, 3)

    async def caller() -> None:
        run_sync(failing_call())

    heard: list[Notice] = []
    with listening(heard.append):
        asyncio.run(caller())
    assert [n.kind for n in heard] == [NoticeKind.BACKOFF]


def test_a_storm_of_backoffs_prints_one_line_a_second_with_a_count(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from canon.cli import notices as cli_notices

    clock = [1000.0]
    monkeypatch.setattr(cli_notices.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(cli_notices._Pace, "last", float("-inf"))
    monkeypatch.setattr(cli_notices._Pace, "skipped", 0)
    storm = Notice(
        NoticeKind.BACKOFF, Backoff("openai/x", FailureCause.RATE_LIMITED, 429, 2.0, 1, 3)
    )
    for _ in range(40):  # forty calls back off within the same second
        cli_notices.print_notice(storm)
    clock[0] += 1.5
    cli_notices.print_notice(storm)
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "canon: judge openai/x: rate limited (HTTP 429); waiting 2.0 s before attempt 2 of 3",
        "canon: judge openai/x: rate limited (HTTP 429); waiting 2.0 s before attempt 2 of 3 "
        "(39 more call(s) backed off since the last line)",
    ]
