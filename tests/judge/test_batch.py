"""Batch mode end to end: canon against a local server with the files and batches endpoints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import pytest
from click.testing import Result

from canon.judge.batch import state_path
from canon.project.store import constitution_from_file, load_rubric

from support.cli import invoke_here as _canon
from support.helper_modules import load_helper
from support.model_judge import PRICED_JUDGE

batch_server = load_helper("judge/batch_server.py")
CONFIG = PRICED_JUDGE + "suite: suite.yaml\n"  # as the priced_project fixture writes it
QUESTIONS_PER_ARTIFACT = 10  # the example constitution: 6 fixed questions + 4 principles


def _usage(result: Result) -> dict[str, Any]:
    usage: dict[str, Any] = json.loads(result.stdout)["usage"]
    return usage


def test_batch_answers_fill_the_cache_at_the_batch_price_and_an_online_rerun_reuses_them(
    priced_project, batch_llm
):
    batched = _canon("score", "--batch", "--format", "json")
    assert batched.exit_code == 0, batched.output
    assert len(batch_llm.batches) == 1 and batch_llm.chat_requests == []
    usage = _usage(batched)
    calls = 3 * QUESTIONS_PER_ARTIFACT
    assert usage["calls"] == usage["batch_calls"] == calls
    # gpt-4o-mini in litellm's table: 0.075 $/M input and 0.30 $/M output in a batch
    prompt, completion = calls * batch_server.PROMPT_TOKENS, calls * batch_server.COMPLETION_TOKENS
    assert usage["prompt_tokens"] == prompt and usage["completion_tokens"] == completion
    assert usage["cost_usd"] == pytest.approx(prompt * 0.075e-6 + completion * 0.30e-6)
    assert "at the batch price" in batched.stderr
    assert not state_path(priced_project / ".canon" / "judge-cache.sqlite3").exists()

    online = _canon("score", "--format", "json")
    assert online.exit_code == 0
    assert batch_llm.chat_requests == [] and len(batch_llm.batches) == 1
    again = _usage(online)
    assert again["calls"] == 0 and again["answers_without_call"] == calls
    first, second = json.loads(batched.stdout), json.loads(online.stdout)
    assert first["artifacts"] == second["artifacts"]


def test_a_killed_run_resumes_the_same_batch_instead_of_paying_twice(priced_project, batch_llm):
    batch_llm.polls_to_finish = 10**9  # the batch never finishes while the first run waits
    env = {**os.environ, "CANON_BATCH_POLL_SECONDS": "0.05"}
    first = subprocess.Popen(
        [sys.executable, "-m", "canon.cli", "score", "--batch", "--quiet"],
        cwd=priced_project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while batch_llm.polls < 2 and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.05)
        assert batch_llm.polls >= 2, "the first run never waited on its batch"
    finally:
        first.kill()  # SIGKILL: no chance to clean up, like a cancelled CI job
        first.wait(timeout=30)
    state = json.loads(state_path(priced_project / ".canon" / "judge-cache.sqlite3").read_text())
    assert [b["id"] for b in state["batches"]] == list(batch_llm.batches)

    batch_llm.polls_to_finish = 1
    resumed = _canon("score", "--batch", "--format", "json")
    assert resumed.exit_code == 0, resumed.output
    assert len(batch_llm.batches) == 1 and batch_llm.uploads == 1  # nothing submitted twice
    assert "resuming the batch" in resumed.stderr
    assert _usage(resumed)["batch_calls"] == 3 * QUESTIONS_PER_ARTIFACT


def test_a_batch_that_expires_half_way_has_the_rest_asked_online(priced_project, batch_llm):
    batch_llm.mode = "expire"
    result = _canon("score", "--batch", "--format", "json")
    assert result.exit_code == 0, result.output
    usage = _usage(result)
    calls = 3 * QUESTIONS_PER_ARTIFACT
    assert usage["batch_calls"] == calls // 2
    assert len(batch_llm.chat_requests) == calls - calls // 2
    assert usage["calls"] == calls
    assert "ended expired" in result.stderr and "asked online" in result.stderr


def test_a_half_failed_batch_has_its_failed_questions_asked_online_never_passed(
    priced_project, batch_llm
):
    batch_llm.mode = "half_fail"  # every second request line fails
    batch_llm.online_reply = lambda body: "ANSWER: partly"  # not a choice of the gate question
    result = _canon("score", "--batch", "--format", "json")
    calls = 3 * QUESTIONS_PER_ARTIFACT
    assert _usage(result)["batch_calls"] == calls // 2
    questions = [
        q.id
        for q in load_rubric().questions_for(
            constitution_from_file(priced_project / "constitution.yaml")
        )
    ]
    failed = [q for i, q in enumerate(questions) if i % 2 == 1]  # same positions per artifact
    for artifact in json.loads(result.stdout)["artifacts"]:
        for question in failed:
            cell = artifact["questions"][question]
            # the online answer, or unscored where it is no choice: never the batch's pass
            assert cell["state"] == "unscored" or cell["score"] == 0.5, (question, cell)
        for question in set(questions) - set(failed):
            assert artifact["questions"][question]["score"] == 1.0
    assert result.exit_code == 1  # "partly" answers pull every artifact below the threshold


def test_a_failed_batch_whose_online_rest_is_down_leaves_questions_unscored(
    priced_project, batch_llm, monkeypatch
):
    batch_llm.mode = "fail"
    (priced_project / "canon.yaml").write_text(
        CONFIG + "judge_options:\n  batch: true\n  max_attempts: 1\n  timeout: 2\n"
    )
    from canon.judge import batch as batch_module

    original = batch_module._collect

    async def then_go_offline(*args: Any, **kwargs: Any) -> Any:
        outcome = await original(*args, **kwargs)
        batch_llm.online_down = True  # the provider goes down once the batch has ended
        return outcome

    monkeypatch.setattr(batch_module, "_collect", then_go_offline)
    result = _canon("score", "--format", "json")  # batch mode from judge_options
    assert result.exit_code == 3, result.output
    document = json.loads(result.stdout)
    assert document["summary"]["unscored_questions"] == 3 * QUESTIONS_PER_ARTIFACT
    assert document["summary"]["canon"] == 0
    assert "ended failed" in result.stderr


def test_a_provider_litellm_cannot_batch_is_named_and_asked_online(
    priced_project, batch_llm, monkeypatch
):
    (priced_project / "canon.yaml").write_text(
        CONFIG.replace("openai:gpt-4o-mini", "hosted_vllm:judge")
    )
    monkeypatch.setenv("HOSTED_VLLM_API_BASE", batch_llm.base_url)
    result = _canon("score", "--batch", "--format", "json")
    assert result.exit_code == 0, result.output
    assert "batch mode is not available for provider 'hosted_vllm'" in result.stderr
    assert batch_llm.batches == {} and len(batch_llm.chat_requests) == 3 * QUESTIONS_PER_ARTIFACT
    usage = _usage(result)
    assert usage["calls"] == 3 * QUESTIONS_PER_ARTIFACT and usage["batch_calls"] == 0
    assert usage["cost_usd"] == "unknown"  # litellm has no price for this model: never 0


@pytest.mark.parametrize("content", ["{not json", '{"batches": [{"id": 3}]}', "[]"])
def test_a_corrupt_batch_state_file_stops_the_run_naming_the_file(
    priced_project, batch_llm, content
):
    path = state_path(priced_project / ".canon" / "judge-cache.sqlite3")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    result = _canon("score", "--batch")
    assert result.exit_code == 2
    assert str(path) in result.stderr and "delete the file" in result.stderr
    assert batch_llm.batches == {} and batch_llm.chat_requests == []


def test_a_poll_that_fails_once_is_retried_and_a_lasting_outage_is_exit_3_keeping_the_id(
    priced_project, batch_llm
):
    batch_llm.poll_faults = 1
    passing = _canon("score", "--batch", "--format", "json")
    assert passing.exit_code == 0, passing.output
    assert _usage(passing)["batch_calls"] == 3 * QUESTIONS_PER_ARTIFACT

    (priced_project / "constitution.yaml").write_text(
        (priced_project / "constitution.yaml").read_text().replace("billing", "invoicing")
    )  # new prompts: nothing cached, a new batch
    batch_llm.poll_faults = 10**6
    failing = _canon("score", "--batch")
    assert failing.exit_code == 3
    assert "cannot read batch" in failing.stderr and "resume" in failing.stderr
    state = json.loads(state_path(priced_project / ".canon" / "judge-cache.sqlite3").read_text())
    assert len(state["batches"]) == 1 and batch_llm.chat_requests == []


def test_accept_by_batch_then_check_online_asks_nothing_and_estimates_zero_calls(
    priced_project, batch_llm
):
    accepted = _canon("accept", "--batch")
    assert accepted.exit_code == 0, accepted.output
    assert "batch call(s) at the batch price" in accepted.stdout
    estimate = _canon("check", "--estimate", "--format", "json")
    assert estimate.exit_code == 0, estimate.output
    assert json.loads(estimate.stdout)["estimate"]["calls"] == 0
    checked = _canon("check", "--format", "json")
    assert checked.exit_code == 0, checked.output
    assert json.loads(checked.stdout)["usage"]["calls"] == 0
    assert batch_llm.chat_requests == [] and len(batch_llm.batches) == 1


def test_an_endpoint_without_a_batch_api_is_named_and_every_question_asked_online(
    priced_project, fake_llm, monkeypatch
):
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.base_url)  # chat completions only
    fake_llm.script("contradict any part", "ANSWER: no")
    fake_llm.script("", "ANSWER: yes")
    result = _canon("score", "--batch", "--format", "json")
    assert result.exit_code == 0, result.output
    assert "the provider refused the batch" in result.stderr
    assert len(fake_llm.requests) == 3 * QUESTIONS_PER_ARTIFACT
    usage = _usage(result)
    assert usage["calls"] == 3 * QUESTIONS_PER_ARTIFACT and usage["batch_calls"] == 0
    assert not state_path(priced_project / ".canon" / "judge-cache.sqlite3").exists()


def test_a_batch_state_that_cannot_be_written_stops_the_run_naming_the_file(
    priced_project, batch_llm
):
    cache_dir = priced_project / ".canon"
    cache_dir.mkdir()
    state_path(cache_dir / "judge-cache.sqlite3").with_name(
        "judge-cache.sqlite3.batches.json.tmp"
    ).mkdir()  # a directory where the temporary file must go
    result = _canon("score", "--batch")
    assert result.exit_code == 2
    assert "cannot record the batch ids" in result.stderr
