"""What a real endpoint's odd replies cost: every request bounded, counted, and budgeted.

Each test runs over real HTTP against the fake OpenAI-compatible server on 127.0.0.1, on both
call paths (litellm and the direct one), and compares what Canon reports with what the server
saw.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from canon.core.artifact import Artifact
from canon.core.constitution import Constitution, Principle
from canon.errors import JudgeError
from canon.judge.base import JudgeRequest
from canon.project.store import load_rubric

from support.cli import invoke_here as _canon
from support.model_judge import model_project

RUBRIC = load_rubric()
CONSTITUTION = Constitution("Resolve billing questions.", (Principle("Be honest."),))
# gpt-4o-mini in litellm's price table, USD per token
INPUT, OUTPUT = 0.15e-6, 0.60e-6


@pytest.fixture(params=["direct", "litellm"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _request() -> JudgeRequest:
    question = RUBRIC.questions_for(CONSTITUTION)[0]
    return JudgeRequest(
        question, Artifact("I refunded the charge."), CONSTITUTION, RUBRIC.instructions
    )


@pytest.mark.parametrize("samples", [1, 3])
def test_an_endpoint_answering_no_choices_is_asked_a_bounded_number_of_times(
    fake_llm, make_judge, samples
):
    fake_llm.script("", always="nochoices")
    fake_llm.honour_n = False
    judge = make_judge(samples=samples, max_attempts=3)
    with pytest.raises(JudgeError, match="held no choices") as info:
        asyncio.run(asyncio.wait_for(judge.answer(_request()), timeout=120))
    # one request per attempt: a top-up that brings nothing is not repeated
    assert len(fake_llm.requests) == 3
    assert info.value.usage.calls == 3  # the unscored question still counts what it spent
    assert info.value.usage.prompt_tokens == 3 * fake_llm.prompt_tokens


def test_an_endpoint_that_ignores_n_is_topped_up_once_per_missing_sample(fake_llm, make_judge):
    fake_llm.script("", "ANSWER: yes")
    fake_llm.honour_n = False
    answer = asyncio.run(make_judge(samples=3).answer(_request()))
    assert len(fake_llm.requests) == 3
    assert answer.usage is not None and answer.usage.calls == 3


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_llm: Any, transport: str) -> Path:
    target = model_project(
        tmp_path,
        "judge_model: openai:gpt-4o-mini\nconstitution_path: constitution.yaml\n"
        "suite: suite.yaml\njudge_cache: false\n"
        f"judge_options:\n  transport: {transport}\n  timeout: 5\n",
    )
    monkeypatch.chdir(target)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.base_url)
    return target


def _unreadable_most_of_the_time(fake_llm: Any, *, contradict: bool = False) -> None:
    # three of five replies name no choice; with ``contradict`` the gate question reads "yes",
    # so confirmation re-asks it (and those requests must be counted too)
    garbage = ("I would rather not say.", "Hmm.", "It depends.")
    gate = "ANSWER: yes" if contradict else "ANSWER: no"
    fake_llm.script("contradict any part", gate, *garbage, gate)
    fake_llm.script("", "ANSWER: yes", *garbage, "ANSWER: yes")


def _set(project: Path, extra: str) -> None:
    config = project / "canon.yaml"
    config.write_text(config.read_text() + extra)


@pytest.mark.parametrize("samples", [1, 3])
def test_reported_calls_and_tokens_equal_what_the_server_served(project, fake_llm, samples):
    _unreadable_most_of_the_time(fake_llm, contradict=True)
    fake_llm.honour_n = False  # every sample after the first is a top-up request
    _set(project, f"  samples: {samples}\n")
    result = _canon("score", "--quiet", "--format", "json")
    assert result.exit_code in (1, 3), result.output
    usage = json.loads(result.stdout)["usage"]
    served = len(fake_llm.requests)
    assert served > 30 * samples  # retries, top-ups and confirmation re-asks happened
    assert usage["calls"] == served
    assert usage["prompt_tokens"] == served * fake_llm.prompt_tokens
    assert usage["completion_tokens"] == served * 3
    assert usage["by_kind"]["confirmation"]["calls"] > 0


def test_max_cost_is_never_exceeded_by_more_than_one_request(project, fake_llm):
    # four of five replies name no choice: many questions end unscored after three paid
    # attempts, and those requests count against the budget like any other
    fake_llm.script("contradict any part", "ANSWER: no")
    fake_llm.script("", "Hmm.", "It depends.", "Well.", "Perhaps.", "ANSWER: yes")
    # Each request really costs more than the estimate before the run (0.3 mills); one
    # request at a time, so the guard's running average is all it has to go on. The old
    # per-question guard overspent here: questions that ended unscored never booked.
    fake_llm.prompt_tokens = 2_000
    per_request = 2_000 * INPUT + 3 * OUTPUT
    budget = 0.006
    _set(project, f"max_cost: {budget}\nconcurrency: 1\n")
    result = _canon("score", "--quiet")
    assert result.exit_code == 4, result.output
    assert "stopped before crossing max_cost" in result.stderr
    assert len(fake_llm.requests) * per_request <= budget + per_request


def test_a_client_error_stops_the_run_with_exit_2_and_the_providers_words(project, fake_llm):
    fake_llm.script("", always="400")
    result = _canon("score", "--quiet")
    assert result.exit_code == 2, result.output  # 3 would make CI retry what cannot work
    assert "rejected the request (HTTP 400: refused with 400)" in result.stderr
    assert len(fake_llm.requests) <= 2  # no retries; at most what was already in flight


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (("score", "--junit-xml", "/proc/canon-x/r.xml"), "the report /proc/canon-x/r.xml"),
        (("check", "--html", "/proc/canon-x/r.html"), "the report /proc/canon-x/r.html"),
        (("score", "--junit-xml", "/proc/r.xml"), "the report /proc/r.xml"),
    ],
)
def test_an_output_path_that_cannot_be_written_stops_before_any_call(project, fake_llm, args, what):
    fake_llm.script("", "ANSWER: yes")
    result = _canon(*args)
    assert result.exit_code == 2, result.output
    assert f"cannot write {what}" in result.stderr
    assert fake_llm.requests == []


def test_accept_checks_its_baseline_path_before_any_call(project, fake_llm):
    fake_llm.script("", "ANSWER: yes")
    _set(project, "baselines_dir: /proc/canon-baselines\n")
    result = _canon("accept", "--quiet")
    assert result.exit_code == 2, result.output
    assert "cannot write the baseline /proc/canon-baselines/suite.json" in result.stderr
    assert fake_llm.requests == []


def test_check_estimate_counts_the_reasks_the_baseline_needed(project, fake_llm):
    # the gate reads "contradiction" everywhere: accept confirms it with re-asks, and an
    # unchanged check needs the same re-asks again
    fake_llm.script("contradict any part", "ANSWER: yes")
    fake_llm.script("", "ANSWER: yes")
    assert _canon("accept", "--quiet").exit_code == 0
    baseline = json.loads((project / "canon" / "baselines" / "suite.json").read_text())
    # accept looks at every cell twice; cells asked more than that were confirmed, and an
    # unchanged check (one look) re-asks them asks - 1 times
    recorded = sum(
        question["asks"] - 1
        for record in baseline["artifacts"].values()
        for question in (record.get("questions") or {}).values()
        if question.get("asks", 0) > 2
    )
    assert recorded > 0
    estimate = _canon("check", "--estimate", "--format", "json")
    assert estimate.exit_code == 0, estimate.output
    planned = json.loads(estimate.stdout)["estimate"]
    assert planned["confirmation_reasks"] == recorded
    before = len(fake_llm.requests)
    checked = _canon("check", "--quiet", "--format", "json")
    assert checked.exit_code == 0, checked.output
    usage = json.loads(checked.stdout)["usage"]
    assert len(fake_llm.requests) - before == usage["calls"] == planned["calls"]
    assert usage["by_kind"]["confirmation"]["calls"] == planned["confirmation_reasks"]


def test_with_the_cache_a_check_over_unchanged_texts_replays_its_reasks(project, fake_llm):
    config = project / "canon.yaml"
    config.write_text(config.read_text().replace("judge_cache: false\n", ""))  # the default
    fake_llm.script("contradict any part", "ANSWER: yes")
    fake_llm.script("", "ANSWER: yes")
    assert _canon("accept", "--quiet").exit_code == 0
    estimate = json.loads(_canon("check", "--estimate", "--format", "json").stdout)["estimate"]
    assert estimate["calls"] == 0 and estimate["confirmation_reasks"] == 0
    before = len(fake_llm.requests)
    assert _canon("check", "--quiet").exit_code == 0
    assert len(fake_llm.requests) == before  # the same evidence, read back: the same verdict
