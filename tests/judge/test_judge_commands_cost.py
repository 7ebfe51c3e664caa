"""`canon calibrate`, `align` and `rejudge` say what they spend, and `--estimate` on each asks
nothing and counts the very requests the real run then sends (a priced model, real HTTP)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from support.cli import invoke_here as _canon
from support.cli import run_canon
from support.helper_modules import load_helper
from support.model_judge import MODEL_JUDGE, PRICED_JUDGE, model_env, model_project

batch_server = load_helper("judge/batch_server.py")

# gpt-4o-mini in litellm's price table, USD per token
INPUT, OUTPUT = 0.15e-6, 0.60e-6
CALIBRATE = ("calibrate", "--cells", "3", "--repeats", "2")
# every artifact of the example suite labelled: the gate and one principle each
LABELS = "".join(
    json.dumps({"id": key, "labels": {"G": "no"}}) + "\n"
    for key in ("duplicate-charge", "large-refund", "roaming-question")
)
MOCK_JUDGE = "judge_model: mock:judge-script.yaml\nconstitution_path: constitution.yaml\n"


def _json(*args: str) -> dict[str, Any]:
    result = _canon(*args, "--format", "json")
    assert result.exit_code == 0, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def _priced(usage: dict[str, Any], calls: int) -> None:
    """The usage of ``calls`` calls to the batch server, priced by litellm's table."""
    prompt, completion = calls * batch_server.PROMPT_TOKENS, calls * batch_server.COMPLETION_TOKENS
    assert (usage["calls"], usage["prompt_tokens"], usage["completion_tokens"]) == (
        calls,
        prompt,
        completion,
    )
    assert usage["cost_usd"] == pytest.approx(prompt * INPUT + completion * OUTPUT)


def _score_usage_keys() -> tuple[set[str], set[str]]:
    """The keys of `canon score`'s JSON usage, and of one of its kinds."""
    usage = _json("score", "--no-cache")["usage"]
    return set(usage), set(next(iter(usage["by_kind"].values()), {}))


def _estimated(*args: str) -> dict[str, Any]:
    estimate: dict[str, Any] = _json(*args, "--estimate")["estimate"]
    return estimate


def test_calibrate_prints_a_line_per_cell_then_its_usage_and_cost(priced_project, batch_llm):
    result = _canon(*CALIBRATE)
    assert result.exit_code == 0, result.output
    asked = len(batch_llm.chat_requests)
    # 3 cells: 2 re-asks, 3 wordings and 2 or 3 choice orders each
    assert 3 * 7 <= asked <= 3 * 8
    progress = [line for line in result.stderr.splitlines() if line.startswith("[")]
    assert [line.split()[0] for line in progress] == ["[1/3]", "[2/3]", "[3/3]"]
    assert all(re.fullmatch(r"\[\d/3\] \S+ \S+: [78] answer\(s\)", line) for line in progress)
    assert f"asking openai/gpt-4o-mini {asked} question(s) about 3 cell(s)" in result.stderr
    prompt, completion = asked * batch_server.PROMPT_TOKENS, asked * batch_server.COMPLETION_TOKENS
    usage_line = result.stdout.splitlines()[-1]
    assert usage_line.startswith(f"judge usage: {asked} call(s), {prompt} prompt + {completion}")
    assert f"cost ${prompt * INPUT + completion * OUTPUT:.4f}" in usage_line

    quiet = _canon(*CALIBRATE, "--quiet")
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_calibrate_json_usage_is_shaped_like_scores(priced_project, batch_llm):
    usage = _json(*CALIBRATE, "--quiet")["usage"]
    _priced(usage, len(batch_llm.chat_requests))
    assert set(usage["by_kind"]) <= {"gate", "facet", "principle"}
    assert sum(kind["calls"] for kind in usage["by_kind"].values()) == usage["calls"]
    keys, kind_keys = _score_usage_keys()
    assert set(usage) == keys and set(next(iter(usage["by_kind"].values()))) == kind_keys


@pytest.mark.parametrize("output", ["text", "json"])
def test_calibrate_estimate_asks_nothing_and_counts_the_run(priced_project, batch_llm, output):
    if output == "json":
        estimate = _estimated(*CALIBRATE)
        calls, cost = estimate["calls"], estimate["cost_usd"]
        assert estimate["prompt_tokens"] > calls * 200  # litellm counts the real prompts
        assert cost == pytest.approx(
            estimate["prompt_tokens"] * INPUT + estimate["completion_tokens"] * OUTPUT
        )
    else:
        shown = _canon(*CALIBRATE, "--estimate")
        assert shown.exit_code == 0, shown.output
        found = re.search(r"estimate: (\d+) judge call\(s\) to openai/gpt-4o-mini", shown.stdout)
        assert found is not None and "nothing was asked" in shown.stdout, shown.stdout
        calls = int(found.group(1))
    assert batch_llm.chat_requests == []
    assert _canon(*CALIBRATE, "--quiet").exit_code == 0
    assert len(batch_llm.chat_requests) == calls


def test_calibrate_over_max_cost_stops_before_any_request(priced_project, batch_llm):
    config = priced_project / "canon.yaml"
    config.write_text(config.read_text() + "max_cost: 0.0001\n")
    result = _canon(*CALIBRATE)
    assert result.exit_code == 4, result.output
    assert "over max_cost $0.0001" in result.stderr and "nothing was spent" in result.stderr
    assert batch_llm.chat_requests == []


def _label_all(project: Path) -> None:
    (project / "suite.labels.jsonl").write_text(LABELS)


def test_align_estimate_counts_the_run_and_the_report_shows_its_usage(priced_project, batch_llm):
    _label_all(priced_project)
    estimate = _estimated("align")
    assert batch_llm.chat_requests == [] and estimate["calls"] == 3 * 10
    assert not (priced_project / "canon" / "baselines").exists()  # nothing was recorded
    document = _json("align", "--quiet")
    assert len(batch_llm.chat_requests) == estimate["calls"]
    _priced(document["usage"], estimate["calls"])
    text = _canon("align", "--quiet", "--no-cache").stdout
    assert f"judge usage: {estimate['calls']} call(s)" in text
    cached = _json("align", "--quiet")["usage"]  # the answer cache: no call, no cost
    assert cached["calls"] == 0 and cached["answers_without_call"] == 3 * 10


def test_align_estimate_and_budget_count_artifacts_a_gate_would_stop(priced_project, batch_llm):
    # align asks the judge about every labelled artifact, even one a policy would stop: the
    # estimate and max_cost must count it too
    (priced_project / "canon.yaml").write_text(
        PRICED_JUDGE + "suite: suite.yaml\npolicy: policy.json\n"
    )
    (priced_project / "responses" / "large-refund.json").write_text('{"decision": "shrug"}')
    _label_all(priced_project)
    estimate = _estimated("align")
    assert (estimate["calls"], estimate["stopped_by_gates"]) == (3 * 10, 0)
    assert _canon("align", "--quiet").exit_code == 0
    assert len(batch_llm.chat_requests) == estimate["calls"]


def test_rejudge_estimate_counts_the_run_and_the_report_shows_its_usage(priced_project, batch_llm):
    (priced_project / "canon.yaml").write_text(MOCK_JUDGE + "suite: suite.yaml\n")
    assert _canon("accept", "--quiet").exit_code == 0
    baseline = priced_project / "canon" / "baselines" / "suite.json"
    before = baseline.read_bytes()
    new_judge = ("rejudge", "--judge", "openai:gpt-4o-mini")
    estimate = _estimated(*new_judge, "--accept")  # an estimate accepts nothing
    assert batch_llm.chat_requests == [] and estimate["calls"] == 3 * 10
    assert baseline.read_bytes() == before
    assert estimate["judge"] == "openai/gpt-4o-mini"
    document = _json(*new_judge, "--quiet")
    assert len(batch_llm.chat_requests) == estimate["calls"]
    _priced(document["usage"], estimate["calls"])
    keys, _ = _score_usage_keys()
    assert set(document["usage"]) == keys
    text = _canon(*new_judge, "--quiet").stdout.splitlines()
    # the cache answers the second run: its usage says so, just before the outcome line
    assert text[-2] == "judge usage: 0 call(s), 0 prompt + 0 completion tokens, cost $0.0000; " + (
        "30 answer(s) without a call"
    )


def test_calibrate_on_an_outage_names_the_cause_and_exits_3(tmp_path, fake_llm):
    project = model_project(
        tmp_path,
        MODEL_JUDGE + "suite: suite.yaml\njudge_options:\n  max_attempts: 1\n",
    )
    fake_llm.script("", "ANSWER: yes", always="500")
    done = run_canon(project, *CALIBRATE, "--format", "json", env=model_env(fake_llm.base_url))
    assert done.returncode == 3, done.stderr
    document = json.loads(done.stdout)  # the report is still printed, and says what is missing
    asked = len(fake_llm.requests)
    assert document["unavailable_answers"] == document["failed_answers"] == asked > 0
    assert document["usage"]["calls"] == 0  # no reply came: nothing was billed
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith(f"canon: error: the judge was unavailable for {asked} answer(s)")
    assert "500" in error and 'run "canon calibrate" again' in error
